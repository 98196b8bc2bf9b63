// REQUIRES: mlir-runner
// RUN: fa-t-opt %s --transform-preload-library="transform-library-paths=%p/Inputs/pipeline-loop-schedule.mlir" --transform-interpreter \
// RUN:   | FileCheck %s --check-prefix=IR
// RUN: fa-t-opt %s --transform-preload-library="transform-library-paths=%p/Inputs/pipeline-loop-schedule.mlir" --transform-interpreter \
// RUN:   | mlir-opt --test-lower-to-llvm \
// RUN:   | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs \
// RUN:   | FileCheck %s

// transform.fat.pipeline_loop (the expansion of the kernel's key-block
// loop, SoftwarePipeline.h) executed on the CPU against the loop it
// expands: an online-softmax-shaped recurrence (o' = α·o in stage 0, + x²
// in stage 1; n' = n + x² in stage 1 alone; out[i + 3] written by stage
// 1) over trip counts 0, 1, 2 and 5 from lb = 2, and (ref2 / pip2) a
// step-2 loop with regions. Each run prints the original's results, then
// the pipelined one's: they must agree.
// With trip count 0 both keep the init; for [2, 4) by hand: x = a[5] = 6,
// a[6] = 7 → o = (0.5·1 + 36)·0.5 + 49 = 67.25, n = 10 + 36 + 49 = 95;
// ref2 over {1}: x = a[3] = 4, (1 + 2·4)·4 = 36.

// IR:     scf.if
// IR:       scf.for
// IR-NOT:   fat.pipeline_stage

// CHECK:      ref 0
// CHECK:      data =
// CHECK-NEXT: [1, 10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
// CHECK:      pip 0
// CHECK:      data =
// CHECK-NEXT: [1, 10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
// CHECK:      ref2 0
// CHECK:      data =
// CHECK-NEXT: [1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
// CHECK:      pip2 0
// CHECK:      data =
// CHECK-NEXT: [1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
// CHECK:      ref 1
// CHECK:      data =
// CHECK-NEXT: [[R1:\[.*\]]]
// CHECK:      pip 1
// CHECK:      data =
// CHECK-NEXT: [[R1]]
// CHECK:      ref2 1
// CHECK:      data =
// CHECK-NEXT: [36, 0, 0, 36, 0, 0, 0, 0, 0, 0, 0, 0]
// CHECK:      pip2 1
// CHECK:      data =
// CHECK-NEXT: [36, 0, 0, 36, 0, 0, 0, 0, 0, 0, 0, 0]
// CHECK:      ref 2
// CHECK:      data =
// CHECK-NEXT: [67.25, 95, 0, 0, 0, 36.5, 67.25, 0, 0, 0, 0, 0]
// CHECK:      pip 2
// CHECK:      data =
// CHECK-NEXT: [67.25, 95, 0, 0, 0, 36.5, 67.25, 0, 0, 0, 0, 0]
// CHECK:      ref2 2
// CHECK:      data =
// CHECK-NEXT: [[Q2:\[.*\]]]
// CHECK:      pip2 2
// CHECK:      data =
// CHECK-NEXT: [[Q2]]
// CHECK:      ref 5
// CHECK:      data =
// CHECK-NEXT: [[R5:\[.*\]]]
// CHECK:      pip 5
// CHECK:      data =
// CHECK-NEXT: [[R5]]
// CHECK:      ref2 5
// CHECK:      data =
// CHECK-NEXT: [[Q5:\[.*\]]]
// CHECK:      pip2 5
// CHECK:      data =
// CHECK-NEXT: [[Q5]]

func.func private @printMemrefF32(memref<*xf32>)

// out[0] = o, out[1] = n, out[2 + 3 + i] = the stage-1 sums.
func.func @ref(%lb: index, %ub: index, %a: memref<?xf32>, %out: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %one = arith.constant 1.0 : f32
  %ten = arith.constant 10.0 : f32
  %half = arith.constant 0.5 : f32
  %r:2 = scf.for %i = %lb to %ub step %c1 iter_args(%o = %one, %n = %ten)
      -> (f32, f32) {
    %k = arith.addi %i, %c3 : index
    %x = memref.load %a[%k] : memref<?xf32>
    %sq = arith.mulf %x, %x : f32
    %s = arith.mulf %o, %half : f32
    %sum = arith.addf %s, %sq : f32
    memref.store %sum, %out[%k] : memref<?xf32>
    %n1 = arith.addf %n, %sq : f32
    scf.yield %sum, %n1 : f32, f32
  }
  memref.store %r#0, %out[%c0] : memref<?xf32>
  memref.store %r#1, %out[%c1] : memref<?xf32>
  return
}

func.func @pip(%lb: index, %ub: index, %a: memref<?xf32>, %out: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %one = arith.constant 1.0 : f32
  %ten = arith.constant 10.0 : f32
  %half = arith.constant 0.5 : f32
  %r:2 = scf.for %i = %lb to %ub step %c1 iter_args(%o = %one, %n = %ten)
      -> (f32, f32) {
    %k = arith.addi %i, %c3 {fat.pipeline_stage = 0, fat.pipeline_cluster = 0} : index
    %x = memref.load %a[%k] {fat.pipeline_stage = 0, fat.pipeline_cluster = 0} : memref<?xf32>
    %sq = arith.mulf %x, %x {fat.pipeline_stage = 0, fat.pipeline_cluster = 0} : f32
    %s = arith.mulf %o, %half {fat.pipeline_stage = 0, fat.pipeline_cluster = 2} : f32
    %sum = arith.addf %s, %sq {fat.pipeline_stage = 1, fat.pipeline_cluster = 1} : f32
    memref.store %sum, %out[%k] {fat.pipeline_stage = 1, fat.pipeline_cluster = 1} : memref<?xf32>
    %n1 = arith.addf %n, %sq {fat.pipeline_stage = 1, fat.pipeline_cluster = 1} : f32
    scf.yield %sum, %n1 : f32, f32
  } {pipeline}
  memref.store %r#0, %out[%c0] : memref<?xf32>
  memref.store %r#1, %out[%c1] : memref<?xf32>
  return
}

// Step 2, an index that is not the induction variable plus invariants (k =
// ⌊i / 2⌋ + 3, recomputed at i − 2 by cloning), a stage-0 op with a region
// (o + 2x by a loop) and a stage-1 one (the product and its store).
func.func @ref2(%lb: index, %ub: index, %a: memref<?xf32>, %out: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %one = arith.constant 1.0 : f32
  %r = scf.for %i = %lb to %ub step %c2 iter_args(%o = %one) -> f32 {
    %h = arith.divui %i, %c2 : index
    %k = arith.addi %h, %c3 : index
    %x = memref.load %a[%k] : memref<?xf32>
    %s = scf.for %t = %c0 to %c2 step %c1 iter_args(%acc = %o) -> f32 {
      %y = arith.addf %acc, %x : f32
      scf.yield %y : f32
    }
    %w = scf.execute_region -> f32 {
      %z = arith.mulf %s, %x : f32
      memref.store %z, %out[%k] : memref<?xf32>
      scf.yield %z : f32
    }
    scf.yield %w : f32
  }
  memref.store %r, %out[%c0] : memref<?xf32>
  return
}

func.func @pip2(%lb: index, %ub: index, %a: memref<?xf32>, %out: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %one = arith.constant 1.0 : f32
  %r = scf.for %i = %lb to %ub step %c2 iter_args(%o = %one) -> f32 {
    %h = arith.divui %i, %c2 {fat.pipeline_stage = 0, fat.pipeline_cluster = 0} : index
    %k = arith.addi %h, %c3 {fat.pipeline_stage = 0, fat.pipeline_cluster = 0} : index
    %x = memref.load %a[%k] {fat.pipeline_stage = 0, fat.pipeline_cluster = 0} : memref<?xf32>
    %s = scf.for %t = %c0 to %c2 step %c1 iter_args(%acc = %o) -> f32 {
      %y = arith.addf %acc, %x : f32
      scf.yield %y : f32
    } {fat.pipeline_stage = 0, fat.pipeline_cluster = 2}
    %w = scf.execute_region -> f32 {
      %z = arith.mulf %s, %x : f32
      memref.store %z, %out[%k] : memref<?xf32>
      scf.yield %z : f32
    } {fat.pipeline_stage = 1, fat.pipeline_cluster = 1}
    scf.yield %w : f32
  } {pipeline}
  memref.store %r, %out[%c0] : memref<?xf32>
  return
}

func.func @run(%trips: index, %a: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c12 = arith.constant 12 : index
  %zero = arith.constant 0.0 : f32
  %ub = arith.addi %c2, %trips : index
  %ref = memref.alloc(%c12) : memref<?xf32>
  %pip = memref.alloc(%c12) : memref<?xf32>
  linalg.fill ins(%zero : f32) outs(%ref : memref<?xf32>)
  linalg.fill ins(%zero : f32) outs(%pip : memref<?xf32>)
  func.call @ref(%c2, %ub, %a, %ref) : (index, index, memref<?xf32>, memref<?xf32>) -> ()
  func.call @pip(%c2, %ub, %a, %pip) : (index, index, memref<?xf32>, memref<?xf32>) -> ()
  %r = memref.cast %ref : memref<?xf32> to memref<*xf32>
  %p = memref.cast %pip : memref<?xf32> to memref<*xf32>
  vector.print str "ref "
  vector.print %trips : index
  call @printMemrefF32(%r) : (memref<*xf32>) -> ()
  vector.print str "pip "
  vector.print %trips : index
  call @printMemrefF32(%p) : (memref<*xf32>) -> ()
  // Step 2 from lb = 1: the same number of iterations.
  %c1 = arith.constant 1 : index
  %ub2 = arith.addi %c1, %trips : index
  %ub2b = arith.addi %ub2, %trips : index
  linalg.fill ins(%zero : f32) outs(%ref : memref<?xf32>)
  linalg.fill ins(%zero : f32) outs(%pip : memref<?xf32>)
  func.call @ref2(%c1, %ub2b, %a, %ref) : (index, index, memref<?xf32>, memref<?xf32>) -> ()
  func.call @pip2(%c1, %ub2b, %a, %pip) : (index, index, memref<?xf32>, memref<?xf32>) -> ()
  vector.print str "ref2 "
  vector.print %trips : index
  call @printMemrefF32(%r) : (memref<*xf32>) -> ()
  vector.print str "pip2 "
  vector.print %trips : index
  call @printMemrefF32(%p) : (memref<*xf32>) -> ()
  memref.dealloc %ref : memref<?xf32>
  memref.dealloc %pip : memref<?xf32>
  return
}

func.func @main() {
  %c12 = arith.constant 12 : index
  %a = memref.alloc(%c12) : memref<?xf32>
  // a[i] = i + 1
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %c12 step %c1 {
    %ii = arith.index_cast %i : index to i32
    %f = arith.sitofp %ii : i32 to f32
    %one = arith.constant 1.0 : f32
    %v = arith.addf %f, %one : f32
    memref.store %v, %a[%i] : memref<?xf32>
  }
  %t0 = arith.constant 0 : index
  %t1 = arith.constant 1 : index
  %t2 = arith.constant 2 : index
  %t5 = arith.constant 5 : index
  func.call @run(%t0, %a) : (index, memref<?xf32>) -> ()
  func.call @run(%t1, %a) : (index, memref<?xf32>) -> ()
  func.call @run(%t2, %a) : (index, memref<?xf32>) -> ()
  func.call @run(%t5, %a) : (index, memref<?xf32>) -> ()
  memref.dealloc %a : memref<?xf32>
  return
}
