// Reads lines (UTF-8, '\n'-separated) on stdin and writes, for each, the Llama 3 ids of
// llama3-tokenizer-js (an independent JavaScript implementation with its own copy of the
// vocabulary and merges) to the file argv[2], without begin or end token; one line of
// space-separated ids per input line.
const fs = require("fs");
const { llama3Tokenizer } = require("llama3-tokenizer-js/bundle/commonjs-llama3-tokenizer-with-baked-data.cjs");
const lines = fs.readFileSync(0, "utf8").split("\n");
if (lines.length && lines[lines.length - 1] === "") lines.pop();
const out = lines.map((line) => llama3Tokenizer.encode(line, { bos: false, eos: false }).join(" "));
fs.writeFileSync(process.argv[2], out.join("\n") + "\n");
