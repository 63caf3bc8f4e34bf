"""A local OpenAI-compatible model server for the Neovim tests: GET /v1/models lists one model,
a chat completion streams a short answer; with --refuse every completion is answered 401, as a
provider refusing the credentials does. Prints its port."""
import http.server, json, sys
REFUSE = "--refuse" in sys.argv
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_GET(self):
        body = json.dumps({"object": "list", "data": [{"id": "tiny-local", "object": "model"}]}).encode()
        self.send_response(200); self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if REFUSE:
            body = json.dumps({"error": {"message": "invalid x-api-key", "type": "authentication_error"}}).encode()
            self.send_response(401); self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
            return
        self.send_response(200); self.send_header("Content-Type", "text/event-stream"); self.end_headers()
        for chunk in ({"role": "assistant", "content": "Hello from "}, {"content": "the local server."}):
            data = {"id": "x", "object": "chat.completion.chunk", "model": "tiny-local",
                    "choices": [{"index": 0, "delta": chunk, "finish_reason": None}]}
            self.wfile.write(b"data: " + json.dumps(data).encode() + b"\n\n")
        end = {"id": "x", "object": "chat.completion.chunk", "model": "tiny-local",
               "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
        self.wfile.write(b"data: " + json.dumps(end).encode() + b"\n\ndata: [DONE]\n\n")
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
