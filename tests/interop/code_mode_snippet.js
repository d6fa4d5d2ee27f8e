// The snippet both SDK code-mode scripts run (python_code_mode.py, ts_code_mode.mjs):
// a search, three catalogue calls in turn and two at once, an upstream call, a caught
// validation error, and a summary.
const found = await tools.search("encode text as base64", {limit: 3});
const a = await tools.base64_codec({input: "code mode"});
const b = await tools.hex_codec({input: a.result.output});
const c = await tools.call("case-converter", {text: "code mode", to: "snake"});
const [d, e] = await Promise.all([tools.slugify({text: "Code Mode"}), tools.text_stats({text: "one two three"})]);
const upstream = await tools.py__shout({words: "from code"});
let invalid = null;
try { await tools.base64_codec({}); } catch (err) { invalid = {code: err.code, retryable: err.retryable}; }
return {
  found: found[0].slug,
  steps: [a, b, c, d, e].map((r) => r.success),
  snake: c.result.output ?? c.result,
  loud: upstream.loud,
  invalid,
};
