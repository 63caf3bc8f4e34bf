"""The frame decoder: both framings, any chunking, oversize frames skipped in sync."""

import json

import pytest

from pi_daemon.wire.framing import CONTENT_LENGTH, NDJSON, FrameDecoder, FrameError, encode


def feed_bytewise(decoder, data: bytes) -> list:
    out = []
    for i in range(len(data)):
        out += decoder.feed(data[i : i + 1])
    return out


def test_ndjson_splits_on_lf_only_and_tolerates_crlf():
    body = json.dumps({"text": "a\u2028b\u2029c"}, ensure_ascii=False).encode()
    data = body + b"\r\n" + b'{"x":1}\n' + b"\n  \n" + b'{"y":2}'
    decoder = FrameDecoder()
    frames = decoder.feed(data)
    assert decoder.framing == NDJSON
    assert frames == [body, b'{"x":1}']  # the last line waits for its LF
    assert json.loads(frames[0])["text"] == "a\u2028b\u2029c"
    assert decoder.feed(b"\n") == [b'{"y":2}']


@pytest.mark.parametrize("sep", [b"\r\n", b"\n"])
@pytest.mark.parametrize("name", [b"Content-Length", b"content-length", b"CONTENT-LENGTH"])
def test_content_length_any_case_crlf_or_lf(sep, name):
    body = '{"t":"é"}'.encode()
    data = name + b": " + str(len(body)).encode() + sep + b"Content-Type: x" + sep + sep + body
    decoder = FrameDecoder()
    assert feed_bytewise(decoder, data * 2) == [body, body]
    assert decoder.framing == CONTENT_LENGTH if name[0:1] in b"Cc" else True


def test_oversize_frames_are_skipped_and_the_stream_stays_in_sync():
    decoder = FrameDecoder(max_frame_bytes=10)
    out = decoder.feed(b'{"a":"' + b"x" * 50 + b'"}\n{"ok":1}\n')
    assert isinstance(out[0], FrameError) and "exceeds the limit of 10" in out[0].message
    assert out[1:] == [b'{"ok":1}']
    # An oversize line that arrives in pieces is reported once and dropped to its LF.
    decoder = FrameDecoder(max_frame_bytes=10)
    out = decoder.feed(b"{" + b"y" * 30) + decoder.feed(b"z" * 30) + decoder.feed(b'}\n{"b":2}\n')
    assert [type(o).__name__ for o in out] == ["FrameError", "bytes"] and out[1] == b'{"b":2}'
    cl = FrameDecoder(max_frame_bytes=10)
    out = cl.feed(b"Content-Length: 40\r\n\r\n" + b"q" * 40 + b"Content-Length: 2\r\n\r\n{}")
    assert isinstance(out[0], FrameError) and out[1] == b"{}"


def test_bad_headers_are_errors_not_hangs():
    decoder = FrameDecoder()
    out = decoder.feed(b"Content-Type: x\r\n\r\nContent-Length: nope\r\n\r\nContent-Length: 2\r\n\r\n{}")
    # One error for the bad stretch; the decoder skips to the next usable header line.
    assert [type(o).__name__ for o in out] == ["FrameError", "bytes"] and out[1] == b"{}"
    assert "without a Content-Length" in out[0].message
    out = FrameDecoder().feed(b"Content-Length: nope\r\n\r\n{}Content-Length: 2\r\n\r\n{}")
    assert [type(o).__name__ for o in out] == ["FrameError", "bytes"]
    assert "invalid Content-Length" in out[0].message


def test_large_frame_in_many_chunks_is_linear():
    body = b'{"p":"' + b"z" * (8 * 1024 * 1024) + b'"}'
    decoder = FrameDecoder()
    out = []
    for i in range(0, len(body), 65536):
        out += decoder.feed(body[i : i + 65536])
    out += decoder.feed(b"\n")
    assert out == [body]


def test_encode_matches_framing():
    assert encode(b"{}", NDJSON) == b"{}\n"
    assert encode("é".encode(), CONTENT_LENGTH) == b"Content-Length: 2\r\n\r\n" + "é".encode()


@pytest.mark.parametrize("chunk", [1, 7, 1 << 16])
def test_a_wrong_content_length_loses_no_following_frame(chunk):
    body = b'{"jsonrpc":"2.0","id":1,"method":"getState","params":{}}'
    good = b"Content-Length: %d\r\n\r\n" % len(body) + body
    for declared in [*range(len(body) + 1, len(body) + 70), len(body) - 3, 10**15, -1]:
        decoder = FrameDecoder(max_frame_bytes=4096)
        data = b"Content-Length: %d\r\n\r\n" % declared + body + good * 2
        out = []
        for i in range(0, len(data), chunk):
            out += decoder.feed(data[i:i + chunk])
        assert out.count(body) >= 2 and any(isinstance(o, FrameError) for o in out), (declared, out)
        assert all(isinstance(o, FrameError) or o in (body, body[:declared]) for o in out), (declared, out)
