"""Images returned by tools reach OpenAI's APIs in a user message right after the results."""

from pi_daemon.llm import openai_completions, openai_responses
from pi_daemon.llm.model import Context, Model
from pi_daemon.messages import AssistantMessage, ImageContent, TextContent, ToolCall, ToolResultMessage, UserMessage

PNG = ImageContent(data="iVBORw0KGgo=", mime_type="image/png")


def context() -> Context:
    return Context(messages=[
        UserMessage(content="look at both"),
        AssistantMessage(content=[ToolCall(id="c1", name="read", arguments={"path": "a.png"}),
                                  ToolCall(id="c2", name="read", arguments={"path": "b.txt"})], stop_reason="toolUse"),
        ToolResultMessage(tool_call_id="c1", tool_name="read", content=[TextContent(text="a.png"), PNG]),
        ToolResultMessage(tool_call_id="c2", tool_name="read", content=[TextContent(text="plain")]),
        UserMessage(content="and?"),
    ])


def test_chat_completions_get_the_images_after_the_run_of_results():
    model = Model(id="m", provider="p", api="openai-completions", base_url="http://x/v1", input=["text", "image"])
    messages = openai_completions.convert_messages(model, context())
    roles = [m["role"] for m in messages]
    assert roles == ["user", "assistant", "tool", "tool", "user", "user"]
    assert messages[2]["content"] == "a.png\n(the images are attached in the next message)"
    assert messages[3]["content"] == "plain"
    assert messages[4]["content"] == [{"type": "text", "text": "Images returned by the tool calls above:"},
                                      {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}]


def test_responses_get_them_the_same_way():
    model = Model(id="m", provider="p", api="openai-responses", base_url="http://x/v1", input=["text", "image"])
    items = openai_responses.convert_input(model, context())
    assert [i.get("type") or i["role"] for i in items] == [
        "user", "function_call", "function_call", "function_call_output", "function_call_output", "user", "user"]
    assert items[5]["content"][1] == {"type": "input_image", "detail": "auto",
                                      "image_url": "data:image/png;base64,iVBORw0KGgo="}
