#!/usr/bin/env python3
"""Loads recbot's web archive in headless Chromium (Debian's `chromium`) over the DevTools
protocol and reports what a person would see, as JSON on stdout; the Swift test judges it.

  archive_browser.py --base http://127.0.0.1:8480 --session ID --recording 3 --search 契約
      --cue-at 2.4 --seek 3.0 --screenshots DIR [--basic-auth user:password] [--only-refusal]

Reports: the session list's text; the search results (rows, first moment link); the recording
page's player after playing 1.5 s (currentTime before/after, videoWidth/Height); the captions
active at --cue-at; where a fresh load of `…#t=<seek>` lands. --only-refusal loads the list
without credentials and reports the status and text (for a server that must refuse).
"""
import argparse
import base64
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

from websockets.sync.client import connect


class Browser:
    def __init__(self):
        self.profile = tempfile.mkdtemp(prefix="recbot-archive-chromium-")
        self.process = subprocess.Popen(
            ["chromium", "--headless=new", "--no-sandbox", "--disable-gpu", "--remote-debugging-port=0",
             f"--user-data-dir={self.profile}", "--autoplay-policy=no-user-gesture-required", "--mute-audio",
             "--window-size=1200,900", "--hide-scrollbars", "--no-first-run", "--disable-extensions",
             "--disable-background-timer-throttling", "--disable-renderer-backgrounding", "--disable-dev-shm-usage",
             "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
        endpoint = None
        deadline = time.time() + 60
        while time.time() < deadline and endpoint is None:
            line = self.process.stderr.readline()
            if not line and self.process.poll() is not None:
                break
            match = re.search(r"DevTools listening on (ws://[^\s]+)", line)
            if match:
                endpoint = match.group(1)
        if endpoint is None:
            self.close()
            raise SystemExit("chromium did not start its DevTools endpoint")
        port = urllib.parse.urlparse(endpoint).port
        pages = []
        for _ in range(100):
            pages = [t for t in json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10)) if t["type"] == "page"]
            if pages:
                break
            time.sleep(0.1)
        self.socket = connect(pages[0]["webSocketDebuggerUrl"], max_size=None, open_timeout=30)
        self.next_id = 0
        self.events = []
        self.call("Page.enable")
        self.call("Network.enable")
        self.call("Runtime.enable")

    def call(self, method, params=None, timeout=60):
        self.next_id += 1
        ident = self.next_id
        self.socket.send(json.dumps({"id": ident, "method": method, "params": params or {}}))
        deadline = time.time() + timeout
        while True:
            message = json.loads(self.socket.recv(timeout=max(0.1, deadline - time.time())))
            if message.get("id") == ident:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            self.events.append(message)

    def evaluate(self, expression, timeout=60):
        result = self.call("Runtime.evaluate", {"expression": expression, "awaitPromise": True, "returnByValue": True,
                                                "timeout": timeout * 1000}, timeout=timeout + 5)
        if "exceptionDetails" in result:
            raise RuntimeError(f"page script failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def load(self, url):
        """Navigates and waits for the load; returns the document's HTTP status."""
        self.events.clear()
        frame = self.call("Page.navigate", {"url": url})
        deadline = time.time() + 60
        while time.time() < deadline:
            if self.evaluate("document.readyState") == "complete" and (url == "about:blank" or self.evaluate("location.href") != "about:blank"):
                break
            time.sleep(0.1)
        for event in self.events:
            if event.get("method") == "Network.responseReceived" and event["params"].get("type") == "Document" \
                    and event["params"].get("loaderId") == frame.get("loaderId"):
                return event["params"]["response"]["status"]
        return None

    def screenshot(self, path):
        data = self.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True})["data"]
        with open(path, "wb") as handle:
            handle.write(base64.b64decode(data))

    def close(self):
        try:
            os.killpg(self.process.pid, 9)
        except OSError:
            pass
        self.process.wait()
        shutil.rmtree(self.profile, ignore_errors=True)


PLAY = """(async () => {
  const v = document.querySelector('figure.main video');
  if (!v) return null;
  v.muted = true;
  if (v.readyState < 1) await new Promise(r => v.addEventListener('loadedmetadata', r, {once: true}));
  const before = v.currentTime;
  await v.play();
  await new Promise(r => setTimeout(r, 1500));
  const after = v.currentTime;
  v.pause();
  return {before, after, videoWidth: v.videoWidth, videoHeight: v.videoHeight, duration: v.duration};
})()"""

CUES = """(async (at) => {
  const v = document.querySelector('figure.main video');
  const track = v.textTracks[0];
  if (!track) return {mode: null, cues: []};
  if (v.readyState < 1) await new Promise(r => v.addEventListener('loadedmetadata', r, {once: true}));
  const seeked = new Promise(r => v.addEventListener('seeked', r, {once: true}));
  location.hash = 't=' + at;
  await seeked;
  for (let i = 0; i < 50 && (!track.cues || track.cues.length === 0); i++) await new Promise(r => setTimeout(r, 100));
  await new Promise(r => setTimeout(r, 300));
  return {mode: track.mode, time: v.currentTime, cues: Array.from(track.activeCues || []).map(c => c.text),
          all: (track.cues ? track.cues.length : 0)};
})(%s)"""

COMPOSITION = """(async () => {
  const v = document.querySelector('figure.composition video');
  if (!v) return null;
  v.muted = true;
  if (v.readyState < 1) await new Promise(r => { v.addEventListener('loadedmetadata', r, {once: true}); v.addEventListener('error', r, {once: true}); });
  await v.play();
  await new Promise(r => setTimeout(r, 1000));
  const played = v.currentTime;
  v.pause();
  const track = v.textTracks[0];
  for (let i = 0; i < 50 && track && !(track.cues && track.cues.length); i++) await new Promise(r => setTimeout(r, 100));
  const cues = track && track.cues ? Array.from(track.cues).map(c => ({start: c.startTime, text: c.text})) : [];
  return {videoWidth: v.videoWidth, videoHeight: v.videoHeight, duration: v.duration, played, captionMode: track ? track.mode : null, cues};
})()"""

LANDED = """(async () => {
  const v = document.querySelector('figure.main video');
  for (let i = 0; i < 100 && (v.readyState < 1 || v.seeking || v.currentTime === 0); i++) await new Promise(r => setTimeout(r, 100));
  return {time: v.currentTime, paused: v.paused};
})()"""


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", required=True)
    parser.add_argument("--session")
    parser.add_argument("--recording")
    parser.add_argument("--search")
    parser.add_argument("--cue-at", type=float)
    parser.add_argument("--seek", type=float)
    parser.add_argument("--screenshots")
    parser.add_argument("--basic-auth")
    parser.add_argument("--only-refusal", action="store_true")
    args = parser.parse_args()
    if args.screenshots:
        os.makedirs(args.screenshots, exist_ok=True)
    browser = Browser()
    report = {}
    try:
        if args.only_refusal:
            status = browser.load(args.base + "/archive/")
            report["refusal"] = {"status": status, "text": browser.evaluate("document.body.innerText")}
            if args.screenshots:
                browser.screenshot(os.path.join(args.screenshots, "refused.png"))
        if args.basic_auth:
            token = base64.b64encode(args.basic_auth.encode()).decode()
            browser.call("Network.setExtraHTTPHeaders", {"headers": {"Authorization": "Basic " + token}})
        if args.session:
            status = browser.load(args.base + "/archive/")
            report["sessions"] = {"status": status, "text": browser.evaluate("document.body.innerText"),
                                  "links": browser.evaluate("Array.from(document.querySelectorAll('table.sessions a')).map(a => a.getAttribute('href'))")}
            if args.screenshots:
                browser.screenshot(os.path.join(args.screenshots, "sessions.png"))
            status = browser.load(args.base + "/archive/sessions/" + urllib.parse.quote(args.session))
            report["session"] = {"status": status, "parts": browser.evaluate("document.querySelectorAll('svg.timeline rect.part').length"),
                                 "players": browser.evaluate("document.querySelectorAll('figure.player video, figure.player audio').length"),
                                 "ticks": browser.evaluate("document.querySelectorAll('svg.timeline line.tick').length"),
                                 "composition": browser.evaluate(COMPOSITION)}
            if args.screenshots:
                browser.screenshot(os.path.join(args.screenshots, "session.png"))
        if args.search:
            status = browser.load(args.base + "/archive/search?q=" + urllib.parse.quote(args.search))
            report["search"] = {"status": status,
                                "rows": browser.evaluate("document.querySelectorAll('table.results tbody tr').length"),
                                "moment": browser.evaluate("(document.querySelector('table.results a.moment') || {}).href || null"),
                                "text": browser.evaluate("(document.querySelector('table.results') || document.body).innerText")}
            if args.screenshots:
                browser.screenshot(os.path.join(args.screenshots, "search.png"))
        if args.recording:
            page = args.base + "/archive/recordings/" + args.recording
            report["recording_status"] = browser.load(page)
            report["play"] = browser.evaluate(PLAY)
            if args.cue_at is not None:
                report["captions"] = browser.evaluate(CUES % json.dumps(args.cue_at))
                if args.screenshots:
                    browser.screenshot(os.path.join(args.screenshots, "recording.png"))
            if args.seek is not None:
                browser.load("about:blank")
                browser.load(page + "#t=" + str(args.seek))
                report["seek"] = browser.evaluate(LANDED)
    finally:
        browser.close()
    json.dump(report, sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    main()
