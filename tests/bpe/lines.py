"""Writes the lines the GPT-2 tokenizer test feeds to ctxsim and to two npm encoders: Brown
sentences (as text: each word/TAG token's word, joined by spaces) and seeded combinations of
what byte-level BPE must get right (accents, CJK, Cyrillic, Arabic, emoji with skin tones and
ZWJ sequences, contractions, runs of spaces and tabs, digits, long words, punctuation).
Usage: lines.py BROWN_DIR COUNT > lines.txt"""
import os
import random
import sys

brown, count = sys.argv[1], int(sys.argv[2])
out = []

# Brown: every document's sentences in turn, until 80% of the count.
sentences = []
for name in sorted(os.listdir(brown)):
    if len(name) != 4 or not name.startswith("c"):
        continue
    with open(os.path.join(brown, name), encoding="utf-8") as f:
        for line in f:
            words = [t.rsplit("/", 1)[0] for t in line.split()]
            if words:
                sentences.append(" ".join(words))
step = max(1, len(sentences) // int(count * 0.8))
out += sentences[::step][: int(count * 0.8)]

pieces = [
    "naïve", "café", "résumé", "São Paulo", "Ångström", "Zürich", "façade", "jalapeño", "coöperate", "ÉCOLE",
    "東京は日本の首都です。", "中文字符测试", "한국어 문장", "ひらがなとカタカナ", "漢字",
    "Привет, мир!", "Съешь же ещё этих мягких французских булок", "Ёлка",
    "مرحبا بالعالم", "اللغة العربية", "שלום עולם", "नमस्ते दुनिया", "สวัสดีครับ", "Γειά σου Κόσμε",
    "👍", "👍🏽", "👍🏿", "👨‍👩‍👧‍👦", "🏳️‍🌈", "🇫🇷🇩🇪", "❤️", "🧑🏾‍💻", "😀😃😄", "✈️",
    "it's", "they're", "we'll", "I'd", "you've", "can't", "don't", "I'm", "'tis", "IT'S", "O'Neil", "rock 'n' roll",
    "12345678901234567890", "3.14159", "1,000,000", "2024-12-05", "0x1F", "4½", "٣٤٥", "१२३",
    "supercalifragilisticexpialidocious", "pneumonoultramicroscopicsilicovolcanoconiosis",
    "!!!???...", "--", "—", "«quoted»", "“curly”", "(parens)", "[brackets]", "{braces}", "#hashtag", "@user", "e-mail", "C++", "a/b",
    "http://example.com/path?q=1&r=2", "user@example.org", "$100", "€50", "£3", "¥1000", "100%", "~tilde~", "_under_",
]
spaces = [" ", "  ", "   ", "\t", "\t\t", " \t ", "    \t", " "]
rng = random.Random(20261205)
while len(out) < count:
    kind = rng.random()
    if kind < 0.15:  # a long word, letters or mixed
        n = rng.randint(30, 300)
        word = "".join(rng.choice("abcdefghijklmnopqrstuvwxyzäöüßéè") for _ in range(n))
        out.append(word if rng.random() < 0.5 else "x" * n)
        continue
    parts = [rng.choice(pieces) for _ in range(rng.randint(1, 8))]
    line = ""
    for p in parts:
        line += p + rng.choice(spaces)
    if rng.random() < 0.5:
        line = line.rstrip(" \t")
    if rng.random() < 0.2:
        line = rng.choice(spaces) + line
    out.append(line)

sys.stdout.write("\n".join(out[:count]) + "\n")
