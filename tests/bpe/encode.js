// Reads lines (UTF-8, '\n'-separated) on stdin and writes, for each, the GPT-2 ids of two
// independent encoders: gpt-3-encoder (OpenAI's encoder.py ported to JS) to the file argv[2],
// js-tiktoken's "gpt2" encoding to argv[3]; one line of space-separated ids per input line.
const fs = require("fs");
const gpt3 = require("gpt-3-encoder");
const { getEncoding } = require("js-tiktoken");
const tiktoken = getEncoding("gpt2");
const text = fs.readFileSync(0, "utf8");
const lines = text.split("\n");
if (lines.length && lines[lines.length - 1] === "") lines.pop();
const a = [], b = [];
for (const line of lines) {
  a.push(gpt3.encode(line).join(" "));
  b.push(tiktoken.encode(line).join(" "));
}
fs.writeFileSync(process.argv[2], a.join("\n") + "\n");
fs.writeFileSync(process.argv[3], b.join("\n") + "\n");
