//! ONNX `Range` whose typed output keeps the datum type the analysis inferred.
//!
//! In the MiniLM graph a `Range` runs from an i64 constant to the squeezed `Shape` of
//! the input (a symbolic dimension). tract-hir 0.22.5 infers its output as `TDim` (the
//! super type of i64 and TDim), but its typed translation sees i64 inputs and wires an
//! i64 `Range`, then refuses its own result ("Output mismatch after rewiring
//! expansion ... expected sequence,TDim got sequence,I64"). This wrapper keeps tract's
//! rule and operator and casts the result to what the analysis inferred.

use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::tract_hir::internal::*;
use tract_onnx::tract_hir::ops::array::Range as HirRange;
use tract_onnx::tract_hir::tract_core::ops::cast::cast;

/// The registration `tract_onnx::onnx().op_register.insert("Range", builder)` takes.
pub fn builder(_ctx: &ParsingContext, _node: &NodeProto) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    Ok((expand(Range(HirRange)), vec![]))
}

#[derive(Debug, Clone, Hash)]
struct Range(HirRange);

impl Expansion for Range {
    fn name(&self) -> StaticName {
        "RangeKeepsInferredType".into()
    }

    fn rules<'r, 'p: 'r, 's: 'r>(
        &'s self,
        s: &mut Solver<'r>,
        inputs: &'p [TensorProxy],
        outputs: &'p [TensorProxy],
    ) -> InferenceResult {
        self.0.rules(s, inputs, outputs)
    }

    fn wire(&self, prefix: &str, model: &mut TypedModel, inputs: &[OutletId]) -> TractResult<TVec<OutletId>> {
        self.0.wire(prefix, model, inputs)
    }

    fn wire_with_inference_model_and_node(
        &self,
        prefix: &str,
        _model: &InferenceModel,
        node: &InferenceNode,
        typed: &mut TypedModel,
        inputs: &[OutletId],
    ) -> TractResult<TVec<OutletId>> {
        let mut out = self.0.wire(prefix, typed, inputs)?;
        let inferred = node.outputs.first().and_then(|o| o.fact.datum_type.concretize());
        if let (Some(want), Some(wire)) = (inferred, out.first().copied()) {
            if typed.outlet_fact(wire)?.datum_type != want {
                out = typed.wire_node(format!("{prefix}.as_inferred"), cast(want), &[wire])?;
            }
        }
        Ok(out)
    }
}
