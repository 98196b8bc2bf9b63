// RUN: fa-t-opt %s --transform-interpreter -split-input-file -verify-diagnostics | FileCheck %s

// transform.fat.pipeline_loop expands an scf.for by its ops' stages
// (FatTransformOps.td, SoftwarePipeline.h), the expansion --fat-pipeline
// gives the consumer's key-block loop. The loop below has the online
// softmax's shape: %o is rescaled in stage 0 and accumulated in stage 1
// (carried as the rescaled value: a chain), %x is read by stage 0 and
// carried to stage 1 (P), %k = i + %off is index arithmetic both stages
// read (recomputed as k − 1 at i − 1), %n is carried by stage 1 alone.

// CHECK-LABEL: func.func @online
// CHECK-SAME:    (%[[LB:.+]]: index, %[[UB:.+]]: index, %[[OFF:.+]]: index, %[[A:.+]]: memref<?xf32>, %[[OUT:.+]]: memref<?xf32>, %[[O0:.+]]: f32, %[[N0:.+]]: f32)
// CHECK:         %[[C1:.+]] = arith.constant 1 : index
// CHECK:         %[[ANY:.+]] = arith.cmpi slt, %[[LB]], %[[UB]] : index
// CHECK:         %[[R:.+]]:2 = scf.if %[[ANY]] -> (f32, f32) {
// Prologue: stage 0 of %lb; the rescaled init is the chain's first value.
// CHECK:           %[[K0:.+]] = arith.addi %[[LB]], %[[OFF]] : index
// CHECK:           %[[X0:.+]] = memref.load %[[A]][%[[K0]]]
// CHECK:           %[[S0:.+]] = arith.mulf %[[O0]], %{{.+}} : f32
// CHECK-NOT:       memref.store
// CHECK:           %[[LO:.+]] = arith.addi %[[LB]], %[[C1]] : index
// Steady: stage 0 of j (cluster 0), stage 1 of j − 1 (cluster 1) reading
// the carried x and k − 1, then stage 0's rescale of the sum stage 1 made.
// CHECK:           %[[S:.+]]:3 = scf.for %[[J:.+]] = %[[LO]] to %[[UB]] step %[[C1]] iter_args(%[[O:.+]] = %[[S0]], %[[N:.+]] = %[[N0]], %[[X:.+]] = %[[X0]]) -> (f32, f32, f32) {
// CHECK-NEXT:        %[[K:.+]] = arith.addi %[[J]], %[[OFF]] : index
// CHECK-NEXT:        %[[KP:.+]] = arith.subi %[[K]], %[[C1]] : index
// CHECK-NEXT:        %[[XJ:.+]] = memref.load %[[A]][%[[K]]]
// CHECK-NEXT:        %[[SUM:.+]] = arith.addf %[[O]], %[[X]] : f32
// CHECK-NEXT:        memref.store %[[SUM]], %[[OUT]][%[[KP]]]
// CHECK-NEXT:        %[[NJ:.+]] = arith.addf %[[N]], %[[X]] : f32
// CHECK-NEXT:        %[[SJ:.+]] = arith.mulf %[[SUM]], %{{.+}} : f32
// CHECK-NEXT:        scf.yield %[[SJ]], %[[NJ]], %[[XJ]] : f32, f32, f32
// CHECK-NEXT:      } {steady}
// Drain: stage 1 of the last iteration lb + ⌊(ub − lb − 1) / 1⌋·1.
// CHECK:           %[[LAST:.+]] = arith.addi %[[LB]], %{{.+}} : index
// CHECK:           %[[SUML:.+]] = arith.addf %[[S]]#0, %[[S]]#2 : f32
// CHECK:           %[[KL:.+]] = arith.addi %[[LAST]], %[[OFF]] : index
// CHECK:           memref.store %[[SUML]], %[[OUT]][%[[KL]]]
// CHECK:           %[[NL:.+]] = arith.addf %[[S]]#1, %[[S]]#2 : f32
// CHECK:           scf.yield %[[SUML]], %[[NL]] : f32, f32
// CHECK:         } else {
// CHECK:           scf.yield %[[O0]], %[[N0]] : f32, f32
// CHECK:         }
// CHECK:         return %[[R]]#0, %[[R]]#1 : f32, f32
// CHECK-NOT:     fat.pipeline_stage
func.func @online(%lb: index, %ub: index, %off: index, %a: memref<?xf32>,
                  %out: memref<?xf32>, %o0: f32, %n0: f32) -> (f32, f32) {
  %c1 = arith.constant 1 : index
  %half = arith.constant 0.5 : f32
  %r:2 = scf.for %i = %lb to %ub step %c1 iter_args(%o = %o0, %n = %n0)
      -> (f32, f32) {
    %k = arith.addi %i, %off {fat.pipeline_stage = 0, fat.pipeline_cluster = 0} : index
    %x = memref.load %a[%k] {fat.pipeline_stage = 0, fat.pipeline_cluster = 0} : memref<?xf32>
    %s = arith.mulf %o, %half {fat.pipeline_stage = 0, fat.pipeline_cluster = 2} : f32
    %sum = arith.addf %s, %x {fat.pipeline_stage = 1, fat.pipeline_cluster = 1} : f32
    memref.store %sum, %out[%k] {fat.pipeline_stage = 1, fat.pipeline_cluster = 1} : memref<?xf32>
    %n1 = arith.addf %n, %x {fat.pipeline_stage = 1, fat.pipeline_cluster = 1} : f32
    scf.yield %sum, %n1 : f32, f32
  }
  return %r#0, %r#1 : f32, f32
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %for = transform.structured.match ops{["scf.for"]} in %root
        : (!transform.any_op) -> !transform.any_op
    %steady = transform.fat.pipeline_loop %for
        : (!transform.any_op) -> !transform.any_op
    transform.annotate %steady "steady" : !transform.any_op
    transform.yield
  }
}

// -----

func.func @stage_zero_reads_stage_one(%n: index, %a: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    %x = memref.load %a[%i] {fat.pipeline_stage = 1, fat.pipeline_cluster = 0} : memref<?xf32>
    // expected-error @below {{in pipeline stage 0 reads a value of stage 1 of the same iteration}}
    memref.store %x, %a[%i] {fat.pipeline_stage = 0, fat.pipeline_cluster = 1} : memref<?xf32>
  }
  return
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %for = transform.structured.match ops{["scf.for"]} in %root
        : (!transform.any_op) -> !transform.any_op
    // expected-error @below {{the loop's schedule does not expand}}
    %steady = transform.fat.pipeline_loop %for
        : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}

// -----

func.func @unscheduled(%n: index, %a: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    // expected-error @below {{needs integer attributes fat.pipeline_stage and fat.pipeline_cluster}}
    %x = memref.load %a[%i] : memref<?xf32>
    memref.store %x, %a[%i] {fat.pipeline_stage = 0, fat.pipeline_cluster = 0} : memref<?xf32>
  }
  return
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %for = transform.structured.match ops{["scf.for"]} in %root
        : (!transform.any_op) -> !transform.any_op
    // expected-error @below {{the loop's schedule does not expand}}
    %steady = transform.fat.pipeline_loop %for
        : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}

// -----

func.func @before_its_operand(%n: index, %a: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    %x = memref.load %a[%i] {fat.pipeline_stage = 0, fat.pipeline_cluster = 1} : memref<?xf32>
    // expected-error @below {{is scheduled before the op that defines its operand}}
    memref.store %x, %a[%i] {fat.pipeline_stage = 0, fat.pipeline_cluster = 0} : memref<?xf32>
  }
  return
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %for = transform.structured.match ops{["scf.for"]} in %root
        : (!transform.any_op) -> !transform.any_op
    // expected-error @below {{the loop's schedule does not expand}}
    %steady = transform.fat.pipeline_loop %for
        : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}

// -----

func.func @chain_read_too_early(%n: index, %a: memref<?xf32>, %o0: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%o = %o0) -> f32 {
    // expected-error @below {{is scheduled before pipeline stage 1 computes the carried value #0 it reads}}
    %s = arith.mulf %o, %o {fat.pipeline_stage = 0, fat.pipeline_cluster = 0} : f32
    %x = memref.load %a[%i] {fat.pipeline_stage = 1, fat.pipeline_cluster = 1} : memref<?xf32>
    %sum = arith.addf %s, %x {fat.pipeline_stage = 1, fat.pipeline_cluster = 1} : f32
    scf.yield %sum : f32
  }
  return %r : f32
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %for = transform.structured.match ops{["scf.for"]} in %root
        : (!transform.any_op) -> !transform.any_op
    // expected-error @below {{the loop's schedule does not expand}}
    %steady = transform.fat.pipeline_loop %for
        : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}

// -----

func.func @not_a_loop(%x: f32) -> f32 {
  // expected-note @below {{target op}}
  %y = arith.addf %x, %x : f32
  return %y : f32
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %add = transform.structured.match ops{["arith.addf"]} in %root
        : (!transform.any_op) -> !transform.any_op
    // expected-error @below {{expected an scf.for target}}
    %steady = transform.fat.pipeline_loop %add
        : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}
