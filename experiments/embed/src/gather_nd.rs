//! ONNX `GatherND` with a correct shape-inference rule, registered in place of
//! tract's own.
//!
//! tract-hir 0.22.5's rule for `GatherND` ties the output's trailing dimensions to the
//! *indices* rank and shape where the ONNX spec says the *data*'s
//! (`out = indices.shape[..-1] ++ data.shape[n + batch_dims..]`). The graph exported by
//! PyTorch for all-MiniLM-L6-v2 builds its attention mask with one such node (data
//! `[batch, seq]`, indices `[batch, 1, 1, seq, 2]`), and the analysis fails with
//! "outputs[0].shape[4] == inputs[1].shape[0]". tract's typed operator (what runs) is
//! right; only the rule is replaced, and the node is then wired to that operator.

use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::tract_hir::internal::*;
use tract_onnx::tract_hir::tract_core::ops::array::GatherNd as TypedGatherNd;

/// The registration `tract_onnx::onnx().op_register.insert("GatherND", builder)` takes.
pub fn builder(_ctx: &ParsingContext, node: &NodeProto) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let batch_dims = node.get_attr_opt("batch_dims")?.unwrap_or(0);
    Ok((expand(GatherNd { batch_dims }), vec![]))
}

#[derive(Debug, Clone, Hash)]
struct GatherNd {
    batch_dims: usize,
}

impl Expansion for GatherNd {
    fn name(&self) -> StaticName {
        "GatherNdFixedRule".into()
    }

    fn rules<'r, 'p: 'r, 's: 'r>(
        &'s self,
        s: &mut Solver<'r>,
        inputs: &'p [TensorProxy],
        outputs: &'p [TensorProxy],
    ) -> InferenceResult {
        check_input_arity(inputs, 2)?;
        check_output_arity(outputs, 1)?;
        s.equals(&outputs[0].datum_type, &inputs[0].datum_type)?;
        let batch_dims = self.batch_dims;
        s.given(&inputs[1].rank, move |s, indices_rank| {
            let indices_rank = usize::try_from(indices_rank)?;
            ensure!(indices_rank >= 1, "GatherND indices must have rank 1 or more");
            for i in 0..indices_rank - 1 {
                s.equals(&outputs[0].shape[i], &inputs[1].shape[i])?;
            }
            s.given_2(&inputs[1].shape[indices_rank - 1], &inputs[0].rank, move |s, n, data_rank| {
                if let Ok(n) = n.to_i64() {
                    let skip = usize::try_from(n)? + batch_dims;
                    let data_rank = usize::try_from(data_rank)?;
                    ensure!(skip <= data_rank, "GatherND indexes {skip} axes of a rank-{data_rank} tensor");
                    s.equals(&outputs[0].rank, (indices_rank - 1 + data_rank - skip) as i64)?;
                    for i in 0..data_rank - skip {
                        s.equals(&outputs[0].shape[indices_rank - 1 + i], &inputs[0].shape[skip + i])?;
                    }
                }
                Ok(())
            })
        })
    }

    fn wire(&self, prefix: &str, model: &mut TypedModel, inputs: &[OutletId]) -> TractResult<TVec<OutletId>> {
        model.wire_node(prefix, TypedGatherNd::new(self.batch_dims), inputs)
    }
}
