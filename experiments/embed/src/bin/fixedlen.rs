//! Does a plan optimised for one fixed sequence length run faster than the symbolic one?
//! (If so, length buckets with padding and an attention mask would pay.)
//!
//! Usage: fixedlen MODEL_DIR
use std::time::Instant;

use tract_onnx::prelude::*;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let [_, dir] = args.as_slice() else {
        anyhow::bail!("usage: fixedlen MODEL_DIR");
    };
    let dir = std::path::Path::new(dir);
    let e = embed_spike::Embedder::from_files(&dir.join("model.onnx"), &dir.join("tokenizer.json"))?;
    for len in [16i64, 32, 64] {
        let mut onnx = tract_onnx::onnx();
        onnx.op_register.insert("GatherND", embed_spike::gather_nd_builder);
        onnx.op_register.insert("Range", embed_spike::range_builder);
        let m = onnx.model_for_path(dir.join("model.onnx"))?.into_typed()?;
        let values = SymbolValues::default().with(&m.symbols.sym("batch"), 1).with(&m.symbols.sym("sequence"), len);
        let t = Instant::now();
        let plan = m.concretize_dims(&values)?.into_optimized()?.into_runnable()?;
        let build = t.elapsed();
        let ids: Vec<u32> = (0..len as u32).map(|i| 1000 + i).collect();
        let input = || -> anyhow::Result<TVec<TValue>> {
            let a = tract_ndarray::Array2::from_shape_vec((1, len as usize), ids.iter().map(|&i| i64::from(i)).collect())?;
            Ok(tvec!(
                Tensor::from(a).into(),
                Tensor::from(tract_ndarray::Array2::<i64>::ones((1, len as usize))).into(),
                Tensor::from(tract_ndarray::Array2::<i64>::zeros((1, len as usize))).into()
            ))
        };
        let reps = 30;
        let t = Instant::now();
        for _ in 0..reps {
            std::hint::black_box(plan.run(input()?)?);
        }
        let fixed = t.elapsed() / reps;
        let t = Instant::now();
        for _ in 0..reps {
            std::hint::black_box(e.embed_ids(&ids)?);
        }
        let symbolic = t.elapsed() / reps;
        println!(
            "{len} tokens: fixed-length plan {:.2} ms (optimised in {:.0} ms), symbolic plan {:.2} ms",
            fixed.as_secs_f64() * 1e3,
            build.as_secs_f64() * 1e3,
            symbolic.as_secs_f64() * 1e3
        );
    }
    Ok(())
}
