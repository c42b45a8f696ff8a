#!/usr/bin/env python3
"""Renders Qwen3.5 chat-template reference prompts (tests/data/chat/qwen35_cases.json).

Provenance: the template is ../shared/data/qwen35/chat_template.jinja (Qwen3.5-4B, thinking on
by default). The "thinking_off_default" variant is the same file with the generation-prompt
branch inverted the way the smaller Qwen3.5 models ship it (`enable_thinking is defined and
enable_thinking is true` -> `<think>\\n`, else the empty think block; spec/qwen35.md 6.2).
Rendering follows transformers' apply_chat_template: jinja2's ImmutableSandboxedEnvironment
with trim_blocks, lstrip_blocks and the loopcontrols extension, a raise_exception global that
raises TemplateError, and tojson = json.dumps(ensure_ascii=False, sort_keys=False). Messages
and tools are passed unchanged; enable_thinking is passed only when a case sets it.

Each case: name, variant, messages, tools (absent: None), options {add_generation_prompt,
enable_thinking?}, and either "prompt" (the exact render) or "error" + "error_type" (what
the template raised). Needs the jinja2 package (PyPI). Usage:
  python3 tools/make_chat_reference.py [--template PATH] [--out PATH]
A wider differential check with random conversations (not committed):
  python3 tools/make_chat_reference.py --random 5000 --out /tmp/c/tests/data/chat/qwen35_cases.json
  HOSTLM_SOURCE_DIR=/tmp/c build/bin/test_qwen35 --gtest_filter='*ChatRender*'
"""
import argparse
import json
import os
import random

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_TEMPLATE = os.path.join(ROOT, "..", "shared", "data", "qwen35", "chat_template.jinja")
DEFAULT_OUT = os.path.join(ROOT, "tests", "data", "chat", "qwen35_cases.json")

THINKING_ON_BRANCH = """    {%- if enable_thinking is defined and enable_thinking is false %}
        {{- '<think>\\n\\n</think>\\n\\n' }}
    {%- else %}
        {{- '<think>\\n' }}
    {%- endif %}"""
THINKING_OFF_BRANCH = """    {%- if enable_thinking is defined and enable_thinking is true %}
        {{- '<think>\\n' }}
    {%- else %}
        {{- '<think>\\n\\n</think>\\n\\n' }}
    {%- endif %}"""


def make_environment():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    return env


# ---- tools ---------------------------------------------------------------------------------

WEATHER = {"type": "function", "function": {
    "name": "get_weather",
    "description": "Get the current weather for a city.",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "City name, e.g. Zürich or 東京"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        "days": {"type": "integer", "minimum": 1, "maximum": 14}},
        "required": ["city"]}}}

# Keys deliberately out of alphabetical order, and strings that need escaping.
SEARCH = {"function": {
    "parameters": {"type": "object", "required": ["query"], "properties": {
        "query": {"description": "Text to find: \"quoted\", back\\slash, tab\there", "type": "string"},
        "filters": {"type": "object", "properties": {"lang": {"type": "string"}}},
        "limit": {"type": ["integer", "null"], "default": None},
        "exact": {"type": "boolean", "default": False}}},
    "name": "search_docs",
    "description": "Search 文档 — line one\nline two\u0001\b\f\u001f\u007f 🌦️ مرحبا"},
    "type": "function"}

# Numbers whose Python spelling differs from most JSON writers.
NUMBERS = {"type": "function", "function": {
    "name": "scale",
    "description": "Scale a value.",
    "parameters": {"type": "object", "properties": {
        "x": {"type": "number", "default": 0.1, "minimum": -0.0, "maximum": 1e16,
              "multipleOf": 1e-7, "examples": [1e15, 100.0, 1.5e300, 12345678901234567890, -3,
                                               2.5e-5, 0.0001, 123456789.125, 1e-4, 9.999e15]},
        "factor": {"type": "number"}}}}}

# The transformers shape of a tool: no "type"/"function" wrapper.
CALC = {"name": "calc", "description": "Evaluate an arithmetic expression.",
        "parameters": {"type": "object", "properties": {"expr": {"type": "string"}}}}

# ---- helpers -------------------------------------------------------------------------------


def system(text):
    return {"role": "system", "content": text}


def user(text):
    return {"role": "user", "content": text}


def asst(text, **extra):
    m = {"role": "assistant", "content": text}
    m.update(extra)
    return m


def tool(text, **extra):
    m = {"role": "tool", "content": text}
    m.update(extra)
    return m


def call(name, arguments, wrapped=True, call_id=None):
    c = {"name": name, "arguments": arguments}
    if not wrapped:
        return c
    out = {"type": "function", "function": c}
    if call_id:
        out = {"id": call_id, **out}
    return out


def case(name, messages, tools=None, variant="default", generation=True, thinking=None):
    options = {"add_generation_prompt": generation}
    if thinking is not None:
        options["enable_thinking"] = thinking
    c = {"name": name, "variant": variant, "messages": messages, "options": options}
    if tools is not None:
        c["tools"] = tools
    return c


AGENT_TURN = [
    user("What's the weather in Paris and Tokyo?"),
    asst("I'll check both cities.", reasoning_content="The user wants two cities.\nCall the tool twice.",
         tool_calls=[call("get_weather", {"city": "Paris"}, call_id="call_1"),
                     call("get_weather", {"city": "Tokyo", "unit": "celsius"}, call_id="call_2")]),
    tool('{"temp": 18, "sky": "cloudy"}', tool_call_id="call_1", name="get_weather"),
    tool('{"temp": 24, "sky": "clear"}', tool_call_id="call_2", name="get_weather"),
]

CASES = [
    case("user_only", [user("Hello!")]),
    case("user_only_thinking_on", [user("Hello!")], thinking=True),
    case("user_only_thinking_off", [user("Hello!")], thinking=False),
    case("no_generation_prompt", [user("Hello!")], generation=False),
    case("system_and_user", [system("You are a helpful assistant."), user("Hi there.")]),
    case("empty_system_no_tools", [system("   "), user("Hi.")]),
    case("content_trimmed", [system("\n\n  Be brief.\t\n"), user("  \n spaced out \n\n ")]),
    case("unicode_whitespace_trimmed",
         [user("\u3000\u00a0\u2028 全角の空白と改行 \u2029\u202f\u205f\u1680\u2000\u200a\x1c\x85")]),
    case("zero_width_space_kept", [user("\u200b text \ufeff")]),
    case("unicode_content",
         [system("Réponds en français. Ответь по-русски. 用中文回答。"),
          user("Emoji 👩‍👩‍👧‍👦 🇯🇵, RTL שלום مرحبا, combining é (e\u0301), Hindi नमस्ते, 한국어")]),
    case("multi_turn",
         [system("You are terse."), user("2+2?"), asst("4"), user("And 3+3?"), asst("6"),
          user("Thanks.")]),
    case("multi_turn_thinking_off",
         [user("Name a colour."), asst("Blue."), user("Another?")], thinking=False),
    case("history_reasoning_dropped",
         [user("First question"), asst("First answer", reasoning_content="Thinking about the first."),
          user("Second question")]),
    case("history_inline_think_dropped",
         [user("Q1"), asst("<think>\nhidden reasoning\n</think>\n\nvisible answer"), user("Q2")]),
    case("last_assistant_keeps_reasoning",
         [user("Q"), asst("Answer.", reasoning_content="  Let me think.  \n")], generation=False),
    case("last_assistant_inline_think_kept",
         [user("Q"), asst("<think>\n\nstep 1\nstep 2\n\n</think>\n\n\nThe answer.")], generation=False),
    case("inline_think_several_tags",
         [user("Q"), asst("pre<think>a</think>mid<think>\nb\n</think>\n\nend")], generation=False),
    case("inline_close_without_open",
         [user("Q"), asst("reasoning only\n</think>\n\nanswer")], generation=False),
    case("reasoning_content_empty_keeps_inline_tags",
         [user("Q"), asst("<think>x</think>answer", reasoning_content="")], generation=False),
    case("reasoning_content_null_uses_inline",
         [user("Q"), asst("<think>x</think>answer", reasoning_content=None)], generation=False),
    case("content_parts_list",
         [{"role": "user", "content": [{"type": "text", "text": "Part one. "},
                                       {"type": "text", "text": "Part two."}]}]),
    case("tools_no_system", [user("Weather in Oslo?")], tools=[WEATHER]),
    case("tools_with_system", [system("Use tools when useful."), user("Weather in Oslo?")],
         tools=[WEATHER, SEARCH]),
    case("tools_blank_system", [system(" \n "), user("Find docs.")], tools=[SEARCH]),
    case("tools_number_spelling", [user("Scale 3 by 2.")], tools=[NUMBERS]),
    case("tools_transformers_shape", [user("1+1?")], tools=[CALC, WEATHER], thinking=False),
    case("agentic_turn_tool_results_grouped", AGENT_TURN, tools=[WEATHER]),
    case("agentic_turn_thinking_off", AGENT_TURN, tools=[WEATHER], thinking=False),
    case("agentic_turn_finished",
         AGENT_TURN + [asst("Paris: 18 °C, cloudy. Tokyo: 24 °C, clear.",
                            reasoning_content="Both results are in."),
                       user("And Berlin?")], tools=[WEATHER]),
    case("tool_call_without_content",
         [user("Weather?"), asst(None, tool_calls=[call("get_weather", {"city": "Rome"})]),
          tool("sunny")], tools=[WEATHER]),
    case("tool_call_whitespace_content",
         [user("Weather?"), asst("  \n", tool_calls=[call("get_weather", {"city": "Rome"})]),
          tool("sunny")], tools=[WEATHER]),
    case("tool_call_argument_types",
         [user("Search."),
          asst("Searching.", tool_calls=[call("search_docs", {
              "query": "multi\nline \"text\" <b>ü</b>", "limit": 5, "exact": True, "none": None,
              "ratio": 0.5, "big": 1e16, "small": 1e-5, "whole": 2.0, "neg": -7,
              "filters": {"lang": "de", "tags": ["a", "ß"], "n": 1.0, "ok": False},
              "list": [1, "two", None, True, 3.25], "empty_obj": {}, "empty_list": [],
              "empty": ""})]),
          tool("[]")], tools=[SEARCH]),
    case("tool_call_unwrapped_and_unsorted_keys",
         [user("Calc."),
          asst("", tool_calls=[call("calc", {"zeta": 1, "alpha": 2, "mid": 3}, wrapped=False),
                               call("calc", {}, wrapped=False)]),
          tool("3"), tool("0")], tools=[CALC]),
    case("tool_call_without_arguments",
         [user("Ping."), asst("", tool_calls=[{"type": "function", "function": {"name": "ping"}}]),
          tool("pong")]),
    case("tool_response_then_user_wrapped",
         [user("Real question"), asst("", tool_calls=[call("calc", {"expr": "1+1"})]),
          tool("2"), asst("It is 2."),
          user("<tool_response>\nnot a real query\n</tool_response>")], tools=[CALC]),
    case("tool_results_interleaved",
         [user("Go."), asst("", tool_calls=[call("calc", {"expr": "1"})]), tool("1"),
          asst("", tool_calls=[call("calc", {"expr": "2"})]), tool(" 2 \n"),
          tool("\n\n3")], tools=[CALC]),
    case("tool_message_first_has_no_header", [tool("orphan result"), user("Hi")]),
    case("unicode_tool_arguments",
         [user("天気は？"),
          asst("調べます。", tool_calls=[call("get_weather", {"city": "東京", "note": "🌸\u00a0x"})]),
          tool("晴れ ☀️")], tools=[WEATHER]),
    case("variant_default_is_off", [user("Hello!")], variant="thinking_off_default"),
    case("variant_thinking_on", [user("Hello!")], variant="thinking_off_default", thinking=True),
    case("variant_thinking_off", [user("Hello!")], variant="thinking_off_default", thinking=False),
    case("variant_agentic_turn", AGENT_TURN, tools=[WEATHER], variant="thinking_off_default"),
    # Conversations the template refuses.
    case("error_no_messages", []),
    case("error_system_not_first", [user("Hi"), system("Late system prompt")]),
    case("error_unknown_role", [{"role": "developer", "content": "x"}, user("Hi")]),
    case("error_no_user_query", [system("S"), asst("Hello")]),
    case("error_only_tool_response_users",
         [user("<tool_response>\nresult\n</tool_response>")]),
    case("error_arguments_not_a_mapping",
         [user("Hi"), asst("", tool_calls=[call("calc", '{"expr": "1+1"}')])]),
]


# ---- random conversations (a wider differential check; not committed) ----------------------

PIECES = ["hello", "世界", "🤔", "é", " ", "  ", "\n", "\n\n", "\t", "\r\n", "\u3000", "\xa0",
          "\u2028", "\x85", "\x1f", "\u200b", "\ufeff", "<think>", "</think>", "<tool_response>",
          "</tool_response>", "<tool_call>", "\"q\"", "\\", "\x01", "}", "x"]


def random_text(rng, max_pieces=8):
    return "".join(rng.choice(PIECES) for _ in range(rng.randint(0, max_pieces)))


def random_content(rng):
    r = rng.random()
    if r < 0.05:
        return None
    if r < 0.12:
        return [{"type": "text", "text": random_text(rng)} for _ in range(rng.randint(0, 3))]
    return random_text(rng)


def random_number(rng):
    r = rng.random()
    if r < 0.2:
        return rng.choice([0.1, -0.0, 0.0, 1e16, 1e15, 9.999999999999999e15, 1e-4, 1e-5, 2.0, 5e-324,
                           1.7976931348623157e308, 0.30000000000000004])
    if r < 0.5:
        return rng.randint(-2**63, 2**64 - 1) if rng.random() < 0.3 else rng.randint(-1000, 1000)
    return rng.uniform(-1, 1) * 10 ** rng.randint(-30, 30)


def random_value(rng, depth=0):
    r = rng.random()
    if depth < 2 and r < 0.15:
        return [random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    if depth < 2 and r < 0.3:
        return {random_text(rng, 2) or "k": random_value(rng, depth + 1)
                for _ in range(rng.randint(0, 3))}
    if r < 0.55:
        return random_text(rng)
    if r < 0.65:
        return rng.choice([True, False, None])
    return random_number(rng)


def random_message(rng, role):
    m = {"role": role, "content": random_content(rng)}
    if role == "assistant":
        r = rng.random()
        if r < 0.3:
            m["reasoning_content"] = random_text(rng)
        elif r < 0.35:
            m["reasoning_content"] = None
        if rng.random() < 0.4:
            m["tool_calls"] = [call(rng.choice(["calc", "get_weather", "f"]),
                                    {random_text(rng, 2) or "a": random_value(rng)
                                     for _ in range(rng.randint(0, 4))},
                                    wrapped=rng.random() < 0.7)
                               for _ in range(rng.randint(1, 3))]
    return m


def random_case(rng, index):
    roles = ["user", "assistant", "tool", "user", "assistant"]
    messages = []
    if rng.random() < 0.5:
        messages.append(random_message(rng, "system"))
    for _ in range(rng.randint(1, 7)):
        role = rng.choice(roles) if rng.random() > 0.01 else rng.choice(["system", "developer"])
        messages.append(random_message(rng, role))
    tools = None
    if rng.random() < 0.5:
        tools = rng.sample([WEATHER, SEARCH, NUMBERS, CALC], rng.randint(0, 4))
    return case(f"random_{index}", messages, tools=tools,
                variant=rng.choice(["default", "thinking_off_default"]),
                generation=rng.random() < 0.7, thinking=rng.choice([None, True, False]))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--template", default=DEFAULT_TEMPLATE)
    parser.add_argument("--out", default=DEFAULT_OUT)
    parser.add_argument("--random", type=int, default=0,
                        help="write this many random conversations instead of the fixed cases")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    with open(args.template, encoding="utf-8") as f:
        source = f.read()
    assert THINKING_ON_BRANCH in source, "the template's generation-prompt branch changed"
    env = make_environment()
    templates = {"default": env.from_string(source),
                 "thinking_off_default": env.from_string(
                     source.replace(THINKING_ON_BRANCH, THINKING_OFF_BRANCH))}

    rng = random.Random(args.seed)
    chosen = [random_case(rng, i) for i in range(args.random)] if args.random else CASES
    cases = []
    names = set()
    for c in chosen:
        assert c["name"] not in names, c["name"]
        names.add(c["name"])
        kwargs = dict(c["options"])
        try:
            c["prompt"] = templates[c["variant"]].render(messages=c["messages"],
                                                         tools=c.get("tools"), **kwargs)
        except Exception as e:  # what the template raised is the expectation
            c["error"] = str(e)
            c["error_type"] = type(e).__name__
        cases.append(c)

    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump({"generator": "tools/make_chat_reference.py",
                   "template": "../shared/data/qwen35/chat_template.jinja",
                   "jinja2": jinja2.__version__, "cases": cases},
                  f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"{len(cases)} cases ({sum('error' in c for c in cases)} errors) -> {args.out}")


if __name__ == "__main__":
    main()
