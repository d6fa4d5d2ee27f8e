//! Search by meaning (issue 16): all-MiniLM-L6-v2 sentence embeddings, fused with the
//! lexical ranker. `wordpiece` turns text into the model's token ids.

pub mod wordpiece;
