// RUN: not fa-t-opt %s --fat-to-ptx="sm='sm_90a} O=3'" 2>&1 | FileCheck %s --check-prefix=SPLICE --implicit-check-not="LLVM ERROR"
// RUN: not fa-t-opt %s --fat-to-ptx="sm=sm_80" 2>&1 | FileCheck %s --check-prefix=SM
// RUN: not fa-t-opt %s --fat-to-ptx="O=-1" 2>&1 | FileCheck %s --check-prefix=ONEG --implicit-check-not="LLVM ERROR"
// RUN: not fa-t-opt %s --fat-to-ptx="O=4" 2>&1 | FileCheck %s --check-prefix=OBIG
// RUN: not fa-t-opt %s --fat-to-ptx="ptx=89" 2>&1 | FileCheck %s --check-prefix=PTX89 --implicit-check-not="not a recognized feature"
// RUN: not fa-t-opt %s --fat-to-ptx="ptx=79" 2>&1 | FileCheck %s --check-prefix=PTX79
// RUN: fa-t-opt %s --fat-to-ptx="ptx=90 O=0" -o /dev/null

// fat-to-ptx splices sm, ptx and O into the text of nvvm-attach-target. A
// value that text cannot hold was a fatal error ("LLVM ERROR: fat-to-ptx: bad
// pipeline"), and a PTX version LLVM's NVPTX backend does not know only a
// warning, with PTX of an older .version than wgmma needs. Each is now an
// error that names what is supported, before any pass runs.

// SPLICE: error: fat-to-ptx: sm = 'sm_90a} O=3' is not supported; supported: sm_90a
// SM: error: fat-to-ptx: sm = 'sm_80' is not supported; supported: sm_90a (the Hopper kernel needs wgmma and setmaxnreg)
// ONEG: error: fat-to-ptx: O = -1 is not supported; supported: 0 to 3
// OBIG: error: fat-to-ptx: O = 4 is not supported; supported: 0 to 3
// PTX89: error: fat-to-ptx: ptx = 89 is not supported; supported: 80 to 88, or 90
// PTX79: error: fat-to-ptx: ptx = 79 is not supported; supported: 80 to 88, or 90

func.func @attention(%q: memref<1x2x64x64xbf16>, %o: memref<1x2x64x64xbf16>) {
  fat.attention ins(%q, %q, %q : memref<1x2x64x64xbf16>, memref<1x2x64x64xbf16>,
                                 memref<1x2x64x64xbf16>) outs(%o : memref<1x2x64x64xbf16>)
  return
}
