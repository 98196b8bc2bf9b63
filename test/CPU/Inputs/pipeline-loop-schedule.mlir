// The transform script of pipeline-loop-runner.mlir: expands the loops
// marked `pipeline` by their ops' stages.
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %for = transform.structured.match ops{["scf.for"]} attributes{pipeline} in %root
        : (!transform.any_op) -> !transform.any_op
    %steady = transform.fat.pipeline_loop %for
        : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}
