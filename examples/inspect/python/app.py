"""The inspect Tool in Python, against `brain:inspect/inspect` (examples/inspect/wit).

    pip install componentize-py
    componentize-py -d ../wit -w inspect componentize app -o inspect.wasm

componentize-py embeds CPython, which also imports wasi:cli, wasi:io, wasi:random
and wasi:clocks: a Brain sandbox provides them scoped to the grant (no arguments,
only granted environment variables, stdout and stderr to telemetry). Admission
refuses any interface a sandbox does not provide, naming it.
"""
import json

from wit_world import exports
from wit_world.imports import host, preopens, types


class Tool(exports.Tool):
    def run(self, invocation: exports.tool.Invocation) -> None:
        path = json.loads(invocation.input)["path"]
        depth = json.loads(invocation.options)["depth"]
        sequence = host.emit("inspect_started", invocation.input)
        try:
            entries = list_path(path, depth)
            outcome = {"status": "ok", "value": {"eventSequence": sequence, "entries": entries}}
        except types.ErrorCode as error:
            outcome = {
                "status": "error",
                "error": {"code": "fs_error", "message": "the workspace refused the path", "details": {"errno": int(error.value)}},
            }
        host.finish(json.dumps(outcome), None)


def list_path(path: str, depth: int) -> list[str]:
    root, _ = preopens.get_directories()[0]
    directory = root.open_at(types.PathFlags.SYMLINK_FOLLOW, path, types.OpenFlags.DIRECTORY, types.DescriptorFlags.READ)
    entries: list[str] = []
    walk(directory, "", depth, entries)
    return entries


def walk(directory: types.Descriptor, prefix: str, depth: int, out: list[str]) -> None:
    stream = directory.read_directory()
    while (entry := stream.read_directory_entry()) is not None:
        is_dir = entry.type == types.DescriptorType.DIRECTORY
        name = prefix + entry.name
        out.append(name + "/" if is_dir else name)
        if is_dir and depth > 1:
            child = directory.open_at(types.PathFlags(0), entry.name, types.OpenFlags.DIRECTORY, types.DescriptorFlags.READ)
            walk(child, name + "/", depth - 1, out)
