// A loopback stand-in for Anthropic's Messages API (POST /v1/messages, streamed as SSE), for the
// daemon's user models.json to point `anthropic` at: a request with the right x-api-key is answered
// with `answer`, any other key gets the 401 Anthropic sends for a wrong key.
import { createServer } from "node:http";

export const WRONG_KEY_MESSAGE = "invalid x-api-key";

function sse(events) {
  return events.map((e) => `event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`).join("");
}

function message(text) {
  return sse([
    { type: "message_start", message: { id: "msg_1", type: "message", role: "assistant", content: [], model: "claude-test",
                                        stop_reason: null, stop_sequence: null, usage: { input_tokens: 25, output_tokens: 1 } } },
    { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
    { type: "content_block_delta", index: 0, delta: { type: "text_delta", text } },
    { type: "content_block_stop", index: 0 },
    { type: "message_delta", delta: { stop_reason: "end_turn", stop_sequence: null }, usage: { output_tokens: 9 } },
    { type: "message_stop" },
  ]);
}

// → {url, keys (the x-api-key of every request), close()}
export function fakeAnthropic(goodKey, answer = "Hello from the loopback Claude.") {
  const keys = [];
  const server = createServer((request, response) => {
    request.resume();
    request.on("end", () => {
      if (request.method !== "POST" || request.url !== "/v1/messages") return response.writeHead(404).end();
      keys.push(request.headers["x-api-key"]);
      if (request.headers["x-api-key"] !== goodKey) {
        response.writeHead(401, { "content-type": "application/json" });
        return response.end(JSON.stringify({ type: "error", error: { type: "authentication_error", message: WRONG_KEY_MESSAGE } }));
      }
      response.writeHead(200, { "content-type": "text/event-stream" });
      response.end(message(answer));
    });
  });
  return new Promise((ok) => server.listen(0, "127.0.0.1", () =>
    ok({ url: `http://127.0.0.1:${server.address().port}`, keys, close: () => server.close() })));
}
