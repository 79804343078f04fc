from __future__ import annotations


def write_and_present(text: str = "hello world") -> list:
    return [
        {"content": "", "tool_calls": [{"name": "write_file", "args": {
            "description": "write", "path": "/mnt/user-data/outputs/hello.txt", "content": text}}]},
        {"content": "", "tool_calls": [{"name": "present_files", "args": {
            "filepaths": ["/mnt/user-data/outputs/hello.txt"]}}]},
        "I wrote **hello.txt** and presented it.",
    ]

