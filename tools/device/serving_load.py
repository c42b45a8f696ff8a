#!/usr/bin/env python3
"""Concurrent streams against any OpenAI-compatible /v1/completions server, the same way for
each: hostlm serve and llama.cpp's llama-server measured by one client (issue 6's
side-by-side serving benchmark; tools/device/run_serving_compare.sh runs both).

For each stream count N, N requests are sent at once, each a distinct random prompt of
--prompt-tokens token ids, asking for --gen tokens with streaming on (temperature 0.8, top_k
40, top_p 0.9, end-of-sequence ignored where the server supports it). Measured per request:
time to the first generated text and to the end, and the generated-token count from the
final usage record (else from the streamed chunks). Reported per N:
  aggregate t/s   all generated tokens / (last end - first send)
  decode t/s      tokens generated while every stream was decoding (after the last first
                  token, before the first end) / that window, estimated from each stream's
                  own rate; empty when there is no such window
  TTFT            mean and max over the requests
One short request goes first so that a server loading the model on demand is not timed.
With --prefix-ttft P, afterwards, --prefix-reps times: a random P-token prompt alone (its cold
time to the first token), then the same prompt plus --prefix-new tokens, whose time to the
first token is what a server's prompt cache is for (one token asked each time; the time is
to the end of that answer), with the prompt tokens the server reports reusing
(usage.prompt_tokens_details.cached_tokens, or llama-server's timings.cache_n).

  serving_load.py --url http://127.0.0.1:PORT --model NAME [--streams 1,8,32,64]
                  [--prompt-tokens 512] [--gen 128] [--vocab 200000] [--label hostlm]
                  [--api-key KEY] [--json OUT.json]
                  [--prefix-ttft 8192 --prefix-new 32 --prefix-reps 3 --prefix-json OUT.json]

Only the standard library, so it runs on the lent GPU machine as it is.
"""

import argparse
import http.client
import json
import random
import sys
import threading
import time
import urllib.parse


def parse_counts(text):
    counts = [int(x) for x in text.split(",") if x.strip()]
    if not counts or min(counts) < 1:
        raise argparse.ArgumentTypeError(f"stream counts must be positive integers: {text!r}")
    return counts


class Stream:
    """One request: sends, reads the SSE stream, records its times and token count."""

    def __init__(self, args, prompt, start_barrier):
        self.args, self.prompt, self.barrier = args, prompt, start_barrier
        self.sent = self.first = self.end = None
        self.tokens = 0
        self.cached = None  # prompt tokens the server reports reusing, where it says
        self.error = None

    def run(self):
        url = urllib.parse.urlsplit(self.args.url)
        body = json.dumps({
            "model": self.args.model, "prompt": self.prompt, "max_tokens": self.args.gen,
            "stream": True, "stream_options": {"include_usage": True}, "temperature": 0.8,
            "top_k": 40, "top_p": 0.9, "ignore_eos": True, "seed": random.randrange(1 << 30),
            "cache_prompt": True,
        })
        headers = {"Content-Type": "application/json"}
        if self.args.api_key:
            headers["Authorization"] = "Bearer " + self.args.api_key
        conn = http.client.HTTPConnection(url.hostname, url.port or 80, timeout=self.args.timeout)
        chunks = 0
        usage = None
        try:
            self.barrier.wait()
            self.sent = time.perf_counter()
            conn.request("POST", "/v1/completions", body=body, headers=headers)
            response = conn.getresponse()
            if response.status != 200:
                raise RuntimeError(f"HTTP {response.status}: {response.read()[:300]!r}")
            for raw in response:
                line = raw.decode("utf-8", "replace").strip()
                if not line.startswith("data:"):
                    continue
                data = line[5:].strip()
                if data == "[DONE]":
                    break
                event = json.loads(data)
                if event.get("usage"):
                    usage = event["usage"]
                    details = usage.get("prompt_tokens_details") or {}
                    if "cached_tokens" in details:
                        self.cached = int(details["cached_tokens"])
                if isinstance(event.get("timings"), dict) and "cache_n" in event["timings"]:
                    self.cached = int(event["timings"]["cache_n"])  # llama-server's report
                for choice in event.get("choices") or []:
                    if choice.get("text"):
                        if self.first is None:
                            self.first = time.perf_counter()
                        chunks += 1
            self.end = time.perf_counter()
        except Exception as e:  # reported per request, the run goes on
            self.error = f"{type(e).__name__}: {e}"
        finally:
            conn.close()
        self.tokens = int(usage["completion_tokens"]) if usage else chunks
        if self.first is None:
            self.first = self.end


def run_count(args, n, rng):
    prompts = [[rng.randrange(args.vocab_floor, args.vocab) for _ in range(args.prompt_tokens)]
               for _ in range(n)]
    barrier = threading.Barrier(n)
    streams = [Stream(args, p, barrier) for p in prompts]
    threads = [threading.Thread(target=s.run) for s in streams]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    errors = [s.error for s in streams if s.error]
    done = [s for s in streams if not s.error]
    row = {"streams": n, "requests": n, "errors": len(errors), "first_error": errors[0] if errors else ""}
    if not done:
        return row
    begin = min(s.sent for s in done)
    last_end = max(s.end for s in done)
    tokens = sum(s.tokens for s in done)
    ttft = [1e3 * (s.first - s.sent) for s in done]
    row.update(tokens=tokens, wall_s=last_end - begin, aggregate_ts=tokens / (last_end - begin),
               ttft_mean_ms=sum(ttft) / len(ttft), ttft_max_ms=max(ttft))
    window_start = max(s.first for s in done)
    window_end = min(s.end for s in done)
    if window_end > window_start and all(s.end > s.first for s in done):
        row["decode_ts"] = sum((s.tokens - 1) / (s.end - s.first) for s in done if s.tokens > 1)
    return row


def one_token(args, prompt):
    """Milliseconds from sending `prompt` to the end of a one-token answer, and the prompt
    tokens the server reports taking from its cache (None when it does not say)."""
    one = argparse.Namespace(**{**vars(args), "gen": 1})
    stream = Stream(one, prompt, threading.Barrier(1))
    stream.run()
    if stream.error:
        raise RuntimeError(stream.error)
    return 1e3 * (stream.end - stream.sent), stream.cached


def prefix_ttft(args, rng):
    """Cold prefix, then prefix plus new tokens, --prefix-reps times with fresh prompts."""
    rows = []
    for _ in range(args.prefix_reps):
        prefix = [rng.randrange(args.vocab_floor, args.vocab) for _ in range(args.prefix_ttft)]
        new = [rng.randrange(args.vocab_floor, args.vocab) for _ in range(args.prefix_new)]
        cold, cold_reused = one_token(args, prefix)
        cached, reused = one_token(args, prefix + new)
        rows.append({"label": args.label, "prefix": args.prefix_ttft, "new": args.prefix_new,
                     "cold_ms": cold, "cached_ttft_ms": cached, "cold_reused": cold_reused,
                     "reused": reused})
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--streams", type=parse_counts, default=parse_counts("1,8,32,64"))
    ap.add_argument("--prompt-tokens", type=int, default=512)
    ap.add_argument("--gen", type=int, default=128)
    ap.add_argument("--vocab", type=int, default=200000, help="prompt ids are drawn below this")
    ap.add_argument("--vocab-floor", type=int, default=1000,
                    help="and at or above this (keeps clear of special tokens)")
    ap.add_argument("--label", default="server")
    ap.add_argument("--api-key", default="")
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", help="also write the rows here")
    ap.add_argument("--prefix-ttft", type=int, default=0,
                    help="then time a cached prefix of this many tokens plus --prefix-new")
    ap.add_argument("--prefix-new", type=int, default=32)
    ap.add_argument("--prefix-reps", type=int, default=3)
    ap.add_argument("--prefix-json", help="write the cached-prefix rows here")
    args = ap.parse_args()
    if args.prompt_tokens < 1 or args.gen < 1 or args.vocab <= args.vocab_floor:
        ap.error("need --prompt-tokens >= 1, --gen >= 1 and --vocab > --vocab-floor")
    rng = random.Random(args.seed)
    # One short request first, so that loading the model is not timed as the first prompt.
    warm = argparse.Namespace(**{**vars(args), "prompt_tokens": 8, "gen": 2})
    warm_row = run_count(warm, 1, rng)
    if warm_row["errors"]:
        print(f"warm-up request failed: {warm_row['first_error']}", file=sys.stderr)
        return 1
    rows = []
    print(f"| server | streams | requests | errors | t/s aggregate | t/s decode | TTFT ms mean / max |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for n in args.streams:
        row = run_count(args, n, rng)
        row["label"] = args.label
        rows.append(row)
        if "aggregate_ts" in row:
            decode = f"{row['decode_ts']:,.1f}" if "decode_ts" in row else "-"
            print(f"| {args.label} | {n} | {n} | {row['errors']} | {row['aggregate_ts']:,.1f} | "
                  f"{decode} | {row['ttft_mean_ms']:,.1f} / {row['ttft_max_ms']:,.1f} |", flush=True)
        else:
            print(f"| {args.label} | {n} | {n} | {row['errors']} | - | - | - |", flush=True)
        if row["errors"]:
            print(f"  first error: {row['first_error']}", file=sys.stderr)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(rows, f, indent=2)
    if args.prefix_ttft > 0:
        prefix_rows = prefix_ttft(args, rng)
        print(f"\n| server | cached prefix | new tokens | cold prefix ms | TTFT ms, prefix cached "
              f"| tokens reused |")
        print("|---|---:|---:|---:|---:|---:|")
        for r in prefix_rows:
            reused = "-" if r["reused"] is None else r["reused"]
            print(f"| {args.label} | {r['prefix']} | {r['new']} | {r['cold_ms']:,.1f} | "
                  f"{r['cached_ttft_ms']:,.1f} | {reused} |", flush=True)
        if args.prefix_json:
            with open(args.prefix_json, "w", encoding="utf-8") as f:
                json.dump(prefix_rows, f, indent=2)
    return 1 if any(r["errors"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
