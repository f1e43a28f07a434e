#!/usr/bin/env python3
"""A stdio MCP server at 2026-07-28 that answers every tools/call with a task, for the client's
task tests (actors/tests/integration/client_tasks.rs). Standard library only.

It follows the tasks extension as a server must: a task only for a request that declared the
extension in its per-request client capabilities (else the call is answered at once), tasks/*
without the declaration is -32021, an unknown task id is -32602. The task reads "working" on its
first poll and "completed" (with the call's result) after that.
"""

import json
import sys

TASKS = "io.modelcontextprotocol/tasks"
TASK = {"status": "working", "createdAt": "2026-07-28T10:00:00Z", "lastUpdatedAt": "2026-07-28T10:00:00Z",
        "ttlMs": 60000, "pollIntervalMs": 100}


def declares_tasks(params):
    capabilities = params.get("_meta", {}).get("io.modelcontextprotocol/clientCapabilities", {})
    return TASKS in capabilities.get("extensions", {})


def answer(message, polls, tasks):
    method, params = message.get("method"), message.get("params") or {}
    if method == "server/discover":
        return {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}, "extensions": {TASKS: {}}},
                "serverInfo": {"name": "stdio-tasks", "version": "1"}, "resultType": "complete"}
    if method == "tools/call":
        result = {"content": [{"type": "text", "text": "done: " + params.get("name", "")}], "resultType": "complete"}
        if not declares_tasks(params):
            return result
        task_id = "stdio-task-%d" % (len(tasks) + 1)
        tasks[task_id] = result
        return dict(TASK, resultType="task", taskId=task_id)
    if method in ("tasks/get", "tasks/cancel"):
        if not declares_tasks(params):
            raise LookupError((-32021, "Missing required client capability"))
        task_id = params.get("taskId")
        if task_id not in tasks:
            raise LookupError((-32602, "Failed to retrieve task: Task not found"))
        if method == "tasks/cancel":
            return {"resultType": "complete"}
        polls[task_id] = polls.get(task_id, 0) + 1
        if polls[task_id] == 1:
            return dict(TASK, resultType="complete", taskId=task_id)
        result = dict(tasks[task_id])
        result.pop("resultType")
        return dict(TASK, resultType="complete", taskId=task_id, status="completed", result=result)
    raise LookupError((-32601, "Method not found: %s" % method))


def main():
    polls, tasks = {}, {}
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        message = json.loads(line)
        if "id" not in message or "method" not in message:
            continue
        try:
            reply = {"jsonrpc": "2.0", "id": message["id"], "result": answer(message, polls, tasks)}
        except LookupError as error:
            code, text = error.args[0]
            reply = {"jsonrpc": "2.0", "id": message["id"], "error": {"code": code, "message": text}}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
