// RUN: rm -rf %t %t.file && fa-t-opt %s -split-input-file -verify-diagnostics --fat-emit-kernels="output-dir=%t" | FileCheck %s --check-prefix=IR
// RUN: FileCheck %s --check-prefix=PTX < %t/fat_k.ptx
// RUN: FileCheck %s --check-prefix=MANIFEST < %t/fat_k.json
// RUN: FileCheck %s --check-prefix=KEPT < %t/fat_twice.json
// RUN: FileCheck %s --check-prefix=SECOND < %t/fat_twice.ptx
// RUN: FileCheck %s --check-prefix=FORCED < %t/fat_forced.json
// RUN: ls %t | FileCheck %s --check-prefix=FILES
// Without output-dir nothing is written and the IR is unchanged.
// RUN: rm -rf %t.none && mkdir %t.none && cd %t.none && fa-t-opt %s -split-input-file --fat-emit-kernels | FileCheck %s --check-prefix=IR
// RUN: ls %t.none | count 0
// An output-dir that cannot be a directory.
// RUN: touch %t.file && not fa-t-opt %s -split-input-file --fat-emit-kernels="output-dir=%t.file" 2>&1 | FileCheck %s --check-prefix=NODIR

// fat-emit-kernels writes, for every kernel named in the module's
// fat.kernels (name -> manifest JSON, from convert-fat-to-nvvm), the PTX of
// its gpu.binary (gpu-module-to-binary{format=isa}) as <name>.ptx and the
// manifest as <name>.json; the IR stays as it is.
// IR:     module attributes {fat.kernels = {fat_k = "{\22name\22: \22fat_k\22, \22schedule\22: {\22forced\22: false}}"}, gpu.container_module}
// IR:       gpu.binary @fat_k [#gpu.object<#nvvm.target<chip = "sm_90a">, assembly = ".version 8.0\0A.target sm_90a\0A.entry fat_k() { ret; }\0A">]
// PTX:      .version 8.0
// PTX-NEXT: .target sm_90a
// PTX-NEXT: .entry fat_k() { ret; }
// MANIFEST: {"name": "fat_k", "schedule": {"forced": false}}
// FILES-NOT:  fat_a.
// FILES:      fat_forced.json
// FILES-NEXT: fat_forced.ptx
// FILES-NEXT: fat_k.json
// FILES-NEXT: fat_k.ptx
// FILES-NEXT: fat_twice.json
// FILES-NEXT: fat_twice.ptx
// FILES-NOT:  fat_
// NODIR: error: output-dir '{{.*}}.file' exists and is not a directory
module attributes {gpu.container_module, fat.kernels = {fat_k = "{\"name\": \"fat_k\", \"schedule\": {\"forced\": false}}"}} {
  gpu.binary @fat_k [#gpu.object<#nvvm.target<chip = "sm_90a">, assembly = ".version 8.0\n.target sm_90a\n.entry fat_k() { ret; }\n">]
}

// -----

// The cost model's kernel of a config, then the same kernel built with its
// choice forced (an ablation variant that is the cost model's own choice):
// the code is the same, and the manifest stays marked as the cost model's,
// which kernel lookup prefers (docs/kernel-abi.md).
// KEPT: "forced": false
// SECOND: second
module attributes {gpu.container_module, fat.kernels = {fat_twice = "{\"schedule\": {\"forced\": false}}"}} {
  gpu.binary @fat_twice [#gpu.object<#nvvm.target<chip = "sm_90a">, assembly = "first">]
}

// -----

module attributes {gpu.container_module, fat.kernels = {fat_twice = "{\"schedule\": {\"forced\": true}}", fat_forced = "{\"schedule\": {\"forced\": true}}"}} {
  gpu.binary @fat_twice [#gpu.object<#nvvm.target<chip = "sm_90a">, assembly = "second">]
  gpu.binary @fat_forced [#gpu.object<#nvvm.target<chip = "sm_90a">, assembly = "forced">]
}
// A forced kernel with no cost-model manifest before it stays forced.
// FORCED: {"schedule": {"forced": true}}

// -----

// Every entry is checked before anything is written: a kernel without its
// gpu.binary,
// expected-error@+1 {{kernel 'fat_lost' has no gpu.binary: run gpu-module-to-binary {format=isa} before fat-emit-kernels}}
module attributes {gpu.container_module, fat.kernels = {fat_lost = "{}"}} {
  func.func @fat_lost() {
    return
  }
}

// -----

// — so a later kernel's error leaves the earlier ones unwritten too (no
// fat_a.* in the folder) —
// expected-error@+1 {{kernel 'fat_z' has no gpu.binary: run gpu-module-to-binary {format=isa} before fat-emit-kernels}}
module attributes {gpu.container_module, fat.kernels = {fat_a = "{}", fat_z = "{}"}} {
  gpu.binary @fat_a [#gpu.object<#nvvm.target<chip = "sm_90a">, assembly = "a">]
}

// -----

// one serialized as something else than PTX,
// expected-error@+2 {{kernel 'fat_bin' was not serialized as PTX (format=isa)}}
module attributes {gpu.container_module, fat.kernels = {fat_bin = "{}"}} {
  gpu.binary @fat_bin [#gpu.object<#nvvm.target<chip = "sm_90a">, bin = "\7FELF">]
}

// -----

// fat.kernels that is not a dictionary,
// expected-error@+1 {{'fat.kernels' must be a dictionary from kernel name to its manifest (a JSON string), got [1, 2]}}
module attributes {gpu.container_module, fat.kernels = [1, 2]} {
}

// -----

// a manifest that is not a string,
// expected-error@+1 {{kernel 'fat_num': its manifest must be a JSON string, got 7 : i32}}
module attributes {gpu.container_module, fat.kernels = {fat_num = 7 : i32}} {
  gpu.binary @fat_num [#gpu.object<#nvvm.target<chip = "sm_90a">, assembly = "x">]
}

// -----

// or a string that is not JSON.
// expected-error@+1 {{kernel 'fat_text': its manifest is not JSON: [1:2, byte=2]: Expected object key}}
module attributes {gpu.container_module, fat.kernels = {fat_text = "{nope"}} {
  gpu.binary @fat_text [#gpu.object<#nvvm.target<chip = "sm_90a">, assembly = "x">]
}
