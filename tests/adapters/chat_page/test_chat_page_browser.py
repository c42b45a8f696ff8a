"""The chat page (GET /) in headless Chromium against a real `hostlm serve` with the tiny model.

Given a server that requires an API key and lists the tiny model (converted to GGUF, in an
LM Studio style folder), the page asks for the key, lists the model, streams a reply with
its reasoning, stops a long generation (the server cancels it), keeps the conversation
across a reload, renders Markdown without letting HTML through, and fits a phone screen.
Screenshots are saved under <build>/test-artifacts/chat_page/.

Needs Debian's chromium and chromium-driver and PyPI's selenium (scripts/install-deps.sh);
fails, rather than skips, when they or `hostlm serve` are missing.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.environ.get("HOSTLM_SOURCE_DIR") or os.path.dirname(os.path.dirname(
    os.path.dirname(HERE)))
BUILD = os.environ.get("HOSTLM_BUILD_DIR", "").removeprefix("set:") or os.path.join(SOURCE, "build")
HOSTLM = os.path.join(BUILD, "bin", "hostlm")
PAGE = os.path.join(SOURCE, "adapters", "openai", "chat_page", "chat.html")
TINY = os.path.join(SOURCE, "tests", "data", "models", "tiny-tied-f32")
ARTIFACTS = os.path.join(BUILD, "test-artifacts", "chat_page")
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
MODEL = "hostlm-tests/tiny-chat"  # publisher/repo in the LM Studio folder
API_KEY = "page-test-key"
LONG = 30000  # max tokens of the generation that is stopped: far more than it gets to

try:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import Select
except ImportError:
    sys.exit("selenium is missing: run scripts/install-deps.sh (pip install selenium)")


def wait_for(condition, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = condition()
        except (StaleElementReferenceException, NoSuchElementException):
            # The page re-rendered between finding an element and reading it, or has not
            # filled it yet (a select before its options come: "No options are selected").
            value = None
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


class Server:
    """`hostlm serve` on a free port (port 0: it logs the address it got), JSON log lines."""

    def __init__(self, tmp):
        lmstudio = os.path.join(tmp, "lmstudio", *MODEL.split("/"))
        os.makedirs(lmstudio)
        gguf = os.path.join(lmstudio, "tiny-chat.gguf")
        subprocess.run([HOSTLM, "convert", TINY, gguf, "--type", "f32"], check=True,
                       capture_output=True, timeout=300)
        env = dict(os.environ, HOME=os.path.join(tmp, "home"),
                   HOSTLM_LMSTUDIO_MODELS=os.path.join(tmp, "lmstudio"))
        for name in ("HOSTLM_HOST", "HOSTLM_API_KEY", "HOSTLM_MODELS", "OLLAMA_MODELS"):
            env.pop(name, None)
        self.log_path = os.path.join(tmp, "serve.log")
        self.log = open(self.log_path, "w+", encoding="utf-8")
        self.process = subprocess.Popen(
            [HOSTLM, "serve", "--host", "127.0.0.1:0", "--no-store", "--api-key", API_KEY,
             "--ctx", str(LONG + 2000), "--parallel", "1", "--log-format", "json"],
            env=env, stdout=self.log, stderr=subprocess.STDOUT)
        listening = wait_for(lambda: self.process.poll() is not None or self.find("listening"),
                             120, "hostlm serve to listen")
        if self.process.poll() is not None:
            raise AssertionError("hostlm serve exited:\n" + self.text())
        self.url = listening[0]["address"]

    def text(self):
        with open(self.log_path, encoding="utf-8") as f:
            return f.read()

    def records(self):
        out = []
        for line in self.text().splitlines():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                pass  # a line not from the logger
        return out

    def find(self, msg, **fields):
        return [r for r in self.records()
                if r.get("msg") == msg and all(r.get(k) == v for k, v in fields.items())]

    def get(self, path, headers=None, method="GET"):
        request = urllib.request.Request(self.url + path, headers=headers or {}, method=method)
        with urllib.request.urlopen(request, timeout=30) as r:
            return r.status, r.headers.get("Content-Type", ""), r.read()

    def processing(self):
        _, _, body = self.get("/metrics", {"Authorization": "Bearer " + API_KEY})
        # The gauge of requests being generated (its name has changed once: accept both).
        found = re.search(r"^hostlm[:_]requests_(?:processing|running) (\d+)$", body.decode(), re.M)
        if not found:
            raise AssertionError("no running-requests gauge in /metrics:\n" + body.decode())
        return int(found.group(1))

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()
        return self.process.returncode


class ChatPageTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        run = subprocess.run([HOSTLM, "serve", "--help"], capture_output=True, text=True,
                             timeout=60)
        if run.returncode != 0 or "--api-key" not in run.stdout:
            raise AssertionError(f"{HOSTLM} has no `serve` command:\n{run.stdout}{run.stderr}")
        for tool in (CHROMIUM, CHROMEDRIVER):
            if not os.path.exists(tool):
                raise AssertionError(f"{tool} is missing: run scripts/install-deps.sh "
                                     "(Debian packages chromium, chromium-driver)")
        cls.tmp = tempfile.mkdtemp(prefix="hostlm-chat-page-")
        cls.server = Server(cls.tmp)
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                    "--window-size=1280,900", f"--user-data-dir={cls.tmp}/profile"):
            options.add_argument(arg)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        cls.browser = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
        os.makedirs(ARTIFACTS, exist_ok=True)

    @classmethod
    def tearDownClass(cls):
        browser = getattr(cls, "browser", None)
        if browser:
            for entry in browser.get_log("browser"):
                print("browser console:", entry.get("level"), entry.get("message"))
            browser.quit()
        server = getattr(cls, "server", None)
        if server:
            code = server.stop()
            print("server log:\n" + server.text()[-4000:])
            assert code == 0, f"hostlm serve exited with {code} on SIGTERM"
        if getattr(cls, "tmp", None):
            shutil.rmtree(cls.tmp, ignore_errors=True)

    # -- helpers over the page --
    def js(self, script, *args):
        return self.browser.execute_script(script, *args)

    def el(self, css):
        return self.browser.find_element(By.CSS_SELECTOR, css)

    def state(self):
        return self.el("body").get_attribute("data-state")

    def assistant_text(self):
        """Reasoning plus answer of the last reply, as the page shows them."""
        return self.js("""const m = [...document.querySelectorAll('.msg.assistant')].pop();
            return m ? m.querySelector('.reasoning').textContent + m.querySelector('.content').textContent : '';""")

    def set_field(self, id_, value):
        field = self.el("#" + id_)
        field.clear()
        if value:
            field.send_keys(value)

    def send(self, text):
        replies = len(self.browser.find_elements(By.CSS_SELECTOR, ".msg.assistant"))
        self.el("#prompt").send_keys(text)
        self.el("#send").click()
        wait_for(lambda: len(self.browser.find_elements(By.CSS_SELECTOR, ".msg.assistant")) > replies,
                 10, "the page to start a reply")

    def screenshot(self, name):
        path = os.path.join(ARTIFACTS, name)
        self.browser.save_screenshot(path)
        print("screenshot:", path)

    # -- the test, in the order a person would use the page --
    def test_chat_page(self):
        self.served_page()
        self.browser.get(self.server.url + "/")
        self.asks_for_the_key_then_lists_models()
        self.streams_a_reply_with_reasoning()
        self.stops_a_long_generation()
        self.keeps_conversations_across_reload()
        self.renders_markdown_safely()
        self.fits_a_phone_screen()

    def served_page(self):
        with open(PAGE, "rb") as f:
            page = f.read()
        status, ctype, body = self.server.get("/", {"Accept": "text/html,application/xhtml+xml"})
        self.assertEqual((status, body), (200, page))
        self.assertTrue(ctype.startswith("text/html"), ctype)
        self.assertEqual(self.server.get("/index.html")[2], page)
        # Clients that are not browsers still get Ollama's answer; HEAD / stays 200.
        self.assertEqual(self.server.get("/")[2], b"Ollama is running")
        self.assertEqual(self.server.get("/", method="HEAD")[0], 200)
        with self.assertRaises(urllib.error.HTTPError) as denied:
            self.server.get("/v1/models")
        self.assertEqual(denied.exception.code, 401)

    def asks_for_the_key_then_lists_models(self):
        wait_for(lambda: "API key" in self.el("#status").text, 20, "the page to ask for a key")
        self.assertTrue(self.el("#settings").is_displayed())
        self.set_field("api_key", API_KEY)
        wait_for(lambda: MODEL in [o.get_attribute("value") for o in
                                   self.browser.find_elements(By.CSS_SELECTOR, "#model option")],
                 20, f"{MODEL} in the model picker")
        Select(self.el("#model")).select_by_value(MODEL)
        # Greedy decoding: the tiny model's (random) text is the same every run.
        self.set_field("temperature", "0")
        self.set_field("max_tokens", "40")
        self.assertTrue(self.el("#thinking").is_selected())

    def streams_a_reply_with_reasoning(self):
        self.send("Hello, page!")
        wait_for(lambda: self.state() == "idle", 120, "the first reply to finish")
        reply = self.el(".msg.assistant:last-of-type")
        self.assertFalse(reply.find_elements(By.CSS_SELECTOR, ".error"), reply.text)
        # Thinking was on: the prompt opens a think block, so the reply starts as reasoning.
        reasoning = reply.find_element(By.CSS_SELECTOR, ".thinking")
        self.assertTrue(reasoning.is_displayed())
        self.assertTrue(self.js("return arguments[0].querySelector('.reasoning').textContent",
                                reasoning).strip())
        self.assertIn(MODEL, reply.find_element(By.CSS_SELECTOR, ".meta").text)
        self.assertRegex(reply.find_element(By.CSS_SELECTOR, ".meta").text, r"\d+ tokens")
        posted = self.server.find("request", path="/v1/chat/completions")
        self.assertEqual(len(posted), 1, posted)
        self.assertEqual(posted[0]["status"], 200)

    def stops_a_long_generation(self):
        self.el("#thinking").click()  # off: the answer comes as content
        self.set_field("max_tokens", str(LONG))
        self.send("Now write at length.")
        samples = [len(self.assistant_text())]
        # The reply grows while it streams: several growing lengths, not one jump at the end.
        while len(samples) < 4:
            time.sleep(0.25)
            self.assertEqual(self.state(), "streaming", "the long generation ended by itself")
            n = len(self.assistant_text())
            if n > samples[-1]:
                samples.append(n)
        print("reply length while streaming:", samples)
        self.assertEqual(self.server.processing(), 1)
        self.assertTrue(self.el("#stop").is_displayed())
        self.el("#stop").click()
        wait_for(lambda: self.state() == "idle", 5, "the page to stop")
        self.assertFalse(self.el("#stop").is_displayed())
        self.assertTrue(self.el("#send").is_displayed())
        stopped = len(self.assistant_text())
        self.assertIn("stopped", self.el(".msg.assistant:last-of-type .meta").text)
        # The server noticed the closed connection and ended the generation early.
        wait_for(lambda: self.server.processing() == 0, 30, "the server to end the request")
        posted = wait_for(lambda: self.server.find("request", path="/v1/chat/completions")[1:],
                          30, "the stopped request's log line")
        print("stopped request:", posted[0])
        self.assertLess(posted[0].get("tokens", LONG), LONG)
        self.assertEqual(posted[0].get("done_reason"), "cancelled")
        time.sleep(0.5)
        self.assertEqual(len(self.assistant_text()), stopped, "text grew after stop")
        self.assertEqual(self.js("return document.querySelector('.msg.assistant:last-of-type .content').textContent.length > 0"), True)
        self.screenshot("desktop.png")

    def keeps_conversations_across_reload(self):
        before = self.js("return [...document.querySelectorAll('.msg')].map(m => m.textContent)")
        self.assertEqual(len(before), 4)
        self.browser.refresh()
        wait_for(lambda: len(self.browser.find_elements(By.CSS_SELECTOR, ".msg")) == 4, 10,
                 "the conversation after reload")
        after = self.js("return [...document.querySelectorAll('.msg')].map(m => m.textContent)")
        self.assertEqual(after, before)
        titles = [e.text for e in self.browser.find_elements(By.CSS_SELECTOR, "#conversations .open")]
        self.assertEqual(titles, ["Hello, page!"])
        # Settings came back too: the key (models listed), the model, thinking off.
        wait_for(lambda: Select(self.el("#model")).first_selected_option.get_attribute("value") == MODEL,
                 20, "the chosen model after reload")
        self.assertFalse(self.el("#thinking").is_selected())
        # A new conversation, then deleting it, leaves the first one.
        self.el("#new-chat").click()
        self.assertEqual(len(self.browser.find_elements(By.CSS_SELECTOR, "#conversations li")), 2)
        self.assertEqual(self.browser.find_elements(By.CSS_SELECTOR, ".msg"), [])
        self.el("#conversations li.current .delete").click()
        self.browser.switch_to.alert.accept()
        self.assertEqual(len(self.browser.find_elements(By.CSS_SELECTOR, "#conversations li")), 1)
        self.assertEqual(len(self.browser.find_elements(By.CSS_SELECTOR, ".msg")), 4)

    def renders_markdown_safely(self):
        hostile = ("# Title\n**bold** and `<b>code</b>`\n\n- one\n- two\n\n"
                   "<img src=x onerror=\"window.hacked=1\"> [link](javascript:window.hacked=1) "
                   "[ok](https://example.org/a_b_c)\n\n| a | b |\n|---|---|\n| <i>1</i> | 2 |\n\n"
                   "```html\n<script>window.hacked=1</script>\n```\n")
        html = self.js("return renderMarkdown(arguments[0])", hostile)
        parsed = self.js("""const d = document.createElement('div'); d.innerHTML = arguments[0];
            return {tags: [...d.querySelectorAll('*')].map(e => e.tagName.toLowerCase()),
                    hrefs: [...d.querySelectorAll('a')].map(a => a.getAttribute('href')),
                    code: d.querySelector('pre code').textContent};""", html)
        for tag in ("h3", "strong", "code", "ul", "li", "table", "td", "pre", "a"):
            self.assertIn(tag, parsed["tags"], html)
        for tag in ("img", "script", "b", "i"):
            self.assertNotIn(tag, parsed["tags"], html)
        self.assertEqual(parsed["hrefs"], ["https://example.org/a_b_c"])
        self.assertEqual(parsed["code"], "<script>window.hacked=1</script>")
        self.assertIsNone(self.js("return window.hacked"))

    def fits_a_phone_screen(self):
        self.browser.set_window_size(390, 844)
        time.sleep(0.3)
        self.assertTrue(self.el("#menu").is_displayed())
        self.assertLessEqual(self.js("return document.documentElement.scrollWidth"),
                             self.js("return window.innerWidth"))
        self.assertTrue(self.el("#prompt").is_displayed() and self.el("#send").is_displayed())
        self.el("#menu").click()
        wait_for(lambda: self.js("return document.getElementById('sidebar').getBoundingClientRect().left") >= 0,
                 5, "the conversation list to slide in")
        self.el("#prompt").send_keys(Keys.ESCAPE)
        wait_for(lambda: self.js("return document.getElementById('sidebar').getBoundingClientRect().right") <= 0,
                 5, "the conversation list to slide away")
        self.screenshot("phone.png")


if __name__ == "__main__":
    unittest.main(verbosity=2)
