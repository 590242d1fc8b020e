"""Drives `git-loaf mcp` with the official MCP Python SDK (`mcp` on PyPI), as a client
nobody here wrote. Run by tests/it/mcp_python.rs: `python mcp_client.py GIT_LOAF REPO`.

Prints one JSON object: what each call answered, for the Rust test to check (it also checks
the repository with git).
"""

import asyncio
import json
import os
import sys

from mcp import Client, StdioServerParameters


def answer(result):
    """A tool result as plain data: its text, whether it is an error, its structured content."""
    text = "".join(block.text for block in result.content if block.type == "text")
    return {
        "text": text,
        "is_error": bool(result.is_error),
        "structured": result.structured_content,
    }


async def main(binary, repo):
    # The test's deterministic environment (git identity, no global config) for the server too.
    server = StdioServerParameters(command=binary, args=["mcp"], cwd=repo, env=dict(os.environ))
    out = {}
    async with Client(server) as client:
        tools = await client.list_tools()
        out["tools"] = sorted(tool.name for tool in tools.tools)
        prompts = await client.list_prompts()
        out["prompts"] = sorted(prompt.name for prompt in prompts.prompts)
        prompt = await client.get_prompt("instructions")
        out["prompt_text"] = prompt.messages[0].content.text
        out["apply"] = answer(
            await client.call_tool(
                "apply",
                {
                    "actions": [
                        {
                            "action": "file_write",
                            "path": f"{repo}/from_python.txt",
                            "content": "written by the Python SDK\n",
                        }
                    ],
                    "model": "python-sdk",
                },
            )
        )
        out["bad_type"] = answer(await client.call_tool("apply", {"reply": 5}))
        out["no_blocks"] = answer(await client.call_tool("apply", {"reply": "no blocks here"}))
        out["log"] = answer(await client.call_tool("log", {"n": 5}))
        out["undo"] = answer(await client.call_tool("undo", {}))
        out["redo"] = answer(await client.call_tool("redo", {}))
    print(json.dumps(out))


asyncio.run(main(sys.argv[1], sys.argv[2]))
