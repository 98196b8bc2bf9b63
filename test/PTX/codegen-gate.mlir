// REQUIRES: cuobjdump
// RUN: rm -rf %t && mkdir -p %t/before/.kernels-x %t/after/.kernels-x
// RUN: fa-t-opt %s --fat-to-ptx="output-dir=%t/before/.kernels-x" -o /dev/null
// RUN: fa-t-opt %s --fat-to-ptx="output-dir=%t/after/.kernels-x" -o /dev/null
// RUN: %python %fat_src_root/scripts/codegen_gate.py %t/before %t/after | FileCheck %s --check-prefix=SAME
//
// A PTX that differs only by a comment (ptxas reads the same program):
// RUN: sed -i '1s|^|// reordered\n|' %t/after/.kernels-x/*.ptx
// RUN: %python %fat_src_root/scripts/codegen_gate.py %t/before %t/after | FileCheck %s --check-prefix=SASS
//
// A PTX whose program changed (one more instruction in the kernel):
// RUN: sed -i '0,/^\tret;/s//\tmembar.cta;\n\tret;/' %t/after/.kernels-x/*.ptx
// RUN: not %python %fat_src_root/scripts/codegen_gate.py %t/before %t/after | FileCheck %s --check-prefix=TIME

// scripts/codegen_gate.py, the codegen gate of refactors on the GPU path:
// the same kernel twice is byte-identical; a PTX that differs but
// assembles to the same machine code needs no timing; one whose machine
// code changed is listed to A/B-time, and the gate fails.
// SAME:  1 PTX in {{.+}}after: 1 byte-identical, 0 differ, 0 new; 0 manifests differ
// SAME:  codegen gate: kernels unchanged
// SASS:  1 PTX in {{.+}}after: 0 byte-identical, 1 differ, 0 new; 0 manifests differ
// SASS:  machine code byte-identical: .kernels-x/fat_attention_fwd_bf16_d64_h16_16_bhsd_{{.+}}.ptx
// SASS:  1 of 1 differing PTX assemble to byte-identical machine code
// SASS:  codegen gate: kernels unchanged
// TIME:  machine code differs (spills 0 -> 0 bytes): .kernels-x/fat_attention_fwd_bf16_d64_h16_16_bhsd_{{.+}}.ptx
// TIME:  0 of 1 differing PTX assemble to byte-identical machine code
// TIME:  to A/B-time: .kernels-x/fat_attention_fwd_bf16_d64_h16_16_bhsd_{{.+}}.ptx
// TIME:  codegen gate: 1 files need a look

func.func @d64(%q: memref<?x16x?x64xbf16>, %o: memref<?x16x?x64xbf16>) {
  fat.attention ins(%q, %q, %q : memref<?x16x?x64xbf16>, memref<?x16x?x64xbf16>, memref<?x16x?x64xbf16>)
      outs(%o : memref<?x16x?x64xbf16>)
  return
}
