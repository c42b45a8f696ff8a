"""A client for a running `hostlm serve` (or any server speaking Ollama's /api/chat).

Standard library only (urllib), so installing the node package never pulls dependencies
into ComfyUI's Python. The protocol is Ollama's: POST /api/chat answers with NDJSON, one
JSON object per line, `message.thinking` / `message.content` pieces, then a final line with
`done: true` and the statistics in nanoseconds; errors are `{"error": "..."}`, either as the
HTTP body or as the last stream line.
"""

import json
import socket
import urllib.error
import urllib.request

from .errors import HostLMError
from .hostlm_capi import ChatResult


def _reason(e):
    reason = getattr(e, "reason", e)
    return str(reason) if reason else e.__class__.__name__


class OllamaClient:
    def __init__(self, base_url, timeout=600.0):
        url = base_url.strip().rstrip("/")
        if not url.startswith(("http://", "https://")):
            url = "http://" + url  # "127.0.0.1:11434" is what OLLAMA_HOST users type
        self.base_url = url
        self.timeout = timeout

    def _open(self, method, path, body=None, timeout=None):
        data = None if body is None else json.dumps(body).encode("utf-8")
        request = urllib.request.Request(
            self.base_url + path, data=data, method=method,
            headers={"Content-Type": "application/json", "Accept": "application/json"})
        try:
            return urllib.request.urlopen(request, timeout=timeout or self.timeout)
        except urllib.error.HTTPError as e:
            raise HostLMError(self._http_error_message(e, path)) from None
        except (urllib.error.URLError, socket.timeout, ConnectionError) as e:
            raise HostLMError(
                f"cannot reach the hostlm server at {self.base_url}: {_reason(e)} "
                "(is `hostlm serve` running?)") from None

    def _http_error_message(self, e, path):
        detail = ""
        try:
            body = e.read().decode("utf-8", "replace")
            detail = json.loads(body).get("error", body)
        except (ValueError, AttributeError, OSError):
            pass
        detail = detail or e.reason
        return f"hostlm server {self.base_url}{path}: {detail} (HTTP {e.code})"

    def _json(self, method, path, body=None, timeout=None):
        with self._open(method, path, body, timeout) as response:
            raw = response.read()
        try:
            return json.loads(raw)
        except ValueError:
            raise HostLMError(
                f"hostlm server {self.base_url}{path}: the answer is not JSON: "
                f"{raw[:200]!r}") from None

    def model_names(self):
        """Names of the server's models (GET /api/tags)."""
        tags = self._json("GET", "/api/tags", timeout=10)
        return [m.get("name") or m.get("model") for m in tags.get("models", [])]

    def check_model(self, name):
        """Raises a readable HostLMError unless the server knows `name` (POST /api/show)."""
        try:
            self._json("POST", "/api/show", {"model": name}, timeout=30)
        except HostLMError as e:
            if "HTTP 404" not in str(e):
                raise
            try:
                known = ", ".join(n for n in self.model_names() if n) or "none"
            except HostLMError:
                known = "unknown"
            raise HostLMError(
                f"model '{name}' not found on the hostlm server at {self.base_url} "
                f"(its models: {known})") from None

    def unload(self, name):
        """Asks the server to unload `name` now (empty messages with keep_alive 0)."""
        self._json("POST", "/api/chat", {"model": name, "messages": [], "keep_alive": 0},
                   timeout=30)

    def chat(self, name, messages, settings, options=None, on_text=None, on_progress=None):
        """Streams an answer. on_text(piece, is_reasoning) / on_progress(n, max) return False
        to stop: the connection is closed, which cancels the request on the server."""
        all_options = {
            "temperature": settings.temperature, "top_p": settings.top_p,
            "top_k": settings.top_k, "min_p": settings.min_p,
            "repeat_penalty": settings.repeat_penalty, "seed": settings.seed,
            "num_predict": settings.max_tokens,
        }
        all_options.update(options or {})
        body = {"model": name, "messages": messages, "stream": True,
                "think": bool(settings.think), "options": all_options}
        text, reasoning = [], []
        pieces = 0
        final = None
        stop = False
        with self._open("POST", "/api/chat", body) as response:
            for number, line in enumerate(response, start=1):
                line = line.strip()
                if not line:
                    continue
                try:
                    event = json.loads(line)
                except ValueError:
                    raise HostLMError(
                        f"hostlm server {self.base_url}/api/chat: stream line {number} is not "
                        f"JSON: {line[:200]!r}") from None
                if "error" in event:
                    raise HostLMError(
                        f"hostlm server {self.base_url}/api/chat: {event['error']}")
                message = event.get("message") or {}
                for field, sink, is_reasoning in (("thinking", reasoning, True),
                                                  ("content", text, False)):
                    piece = message.get(field) or ""
                    if piece:
                        sink.append(piece)
                        if on_text is not None and on_text(piece, is_reasoning) is False:
                            stop = True
                if message.get("thinking") or message.get("content"):
                    pieces += 1  # one stream line is about one token
                    if on_progress is not None and on_progress(
                            pieces, settings.max_tokens) is False:
                        stop = True
                if event.get("done"):
                    final = event
                    break
                if stop:
                    break
        if final is None and not stop:
            raise HostLMError(
                f"hostlm server {self.base_url}/api/chat: the stream ended without its final "
                "line (the server stopped or the connection broke)")
        cancelled = final is None
        final = final or {}
        return ChatResult(
            text="".join(text), reasoning="".join(reasoning),
            prompt_tokens=int(final.get("prompt_eval_count", 0)),
            generated_tokens=int(final.get("eval_count", pieces)),
            done_reason="cancelled" if cancelled else final.get("done_reason", "stop"),
            prompt_ms=final.get("prompt_eval_duration", 0) / 1e6,
            generate_ms=final.get("eval_duration", 0) / 1e6)
