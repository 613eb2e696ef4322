#!/usr/bin/python3
"""pl-proxy.py PORT PATTERN CMD...: an HTTP proxy on 127.0.0.1:PORT before
the Placement at PLACEMENT_URL. Just before it forwards the first PUT
whose path holds PATTERN, it runs CMD (a concurrent writer, as Nova's
periodic update would be). Logs "METHOD PATH STATUS" per request; says
"listening" once ready."""
import http.server
import os
import subprocess
import sys
import urllib.error
import urllib.request

UPSTREAM = os.environ.get("PLACEMENT_URL", "http://127.0.0.1:8778")
PORT, PATTERN, CMD = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
fired = []


class Proxy(http.server.BaseHTTPRequestHandler):
    def forward(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else None
        if self.command == "PUT" and PATTERN in self.path and not fired:
            fired.append(1)
            subprocess.run(["/usr/bin/python3"] + CMD, check=True)
        r = urllib.request.Request(UPSTREAM + self.path, data=body,
                                   method=self.command)
        for k, v in self.headers.items():
            if k.lower() not in ("host", "content-length", "connection"):
                r.add_header(k, v)
        try:
            with urllib.request.urlopen(r, timeout=30) as resp:
                st, hdrs, text = resp.status, resp.headers, resp.read()
        except urllib.error.HTTPError as e:
            st, hdrs, text = e.code, e.headers, e.read()
        sys.stdout.write("%s %s %d \n" % (self.command, self.path, st))
        sys.stdout.flush()
        self.send_response(st)
        for k, v in hdrs.items():
            if k.lower() not in ("content-length", "connection",
                                 "transfer-encoding", "date", "server"):
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(text)))
        self.end_headers()
        self.wfile.write(text)

    do_GET = do_PUT = do_POST = do_DELETE = forward

    def log_message(self, *args):
        pass


srv = http.server.HTTPServer(("127.0.0.1", PORT), Proxy)
print("listening", flush=True)
srv.serve_forever()
