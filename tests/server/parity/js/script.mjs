// One script, run with the official JavaScript client (@langchain/langgraph-sdk) against a LangGraph
// Platform server: `node script.mjs <api url> <assistant id> [<headers as JSON>]`. It drives the server
// through threads, a run streamed with ["values", "messages-tuple", "updates"], a joined stream, state,
// history and runs.wait, and prints what each step saw as one JSON object (a transcript). The pytest
// tests/server/test_langgraph_js_parity.py runs it against `langgraph dev` and against the extension and
// compares the transcripts field by field (ids and timestamps aside), as for the Python SDK's script.
import { Client } from "@langchain/langgraph-sdk";

const [url, assistantId, headersJson] = process.argv.slice(2);
if (!url || !assistantId) {
  console.error("usage: node script.mjs <api url> <assistant id> [<headers as JSON>]");
  process.exit(2);
}
const client = new Client({ apiUrl: url, apiKey: null, defaultHeaders: JSON.parse(headersJson || "{}") });
const MSG = { messages: [{ role: "user", content: "hello parity" }] };
// Keys of a `messages` tuple's metadata that come from the graph run (the rest describe the deployment).
const GRAPH_METADATA = new Set(["langgraph_node", "langgraph_step", "langgraph_triggers", "langgraph_path",
  "langgraph_checkpoint_ns", "checkpoint_ns", "thread_id", "run_id", "ls_provider", "ls_model_type",
  "ls_model_name"]);

async function status(promise) {
  try {
    await promise;
    return 200;
  } catch (error) {
    if (typeof error?.status === "number") return error.status;
    throw error;
  }
}

const messagesOf = (values) => (values && typeof values === "object" ? { messages: values.messages ?? null } : values);

// Event names (consecutive repeats collapsed) and one sample of each event's data, as the Python script.
function events(parts) {
  const names = [];
  const samples = {};
  for (const part of parts) {
    if (names[names.length - 1] !== part.event) names.push(part.event);
    if (part.event === "values") {
      samples.values = part.data; // the last one: the final state
    } else if (part.event === "messages") {
      if (Array.isArray(part.data) && part.data.length === 2) {
        if (!("messages" in samples)) {
          const [chunk, meta] = part.data;
          samples.messages = [chunk, Object.fromEntries(Object.entries(meta).filter(([k]) => GRAPH_METADATA.has(k)))];
        }
        if (part.data[0]?.content) samples.messages_text = (samples.messages_text ?? "") + String(part.data[0].content);
      }
    } else if (!(part.event in samples)) {
      samples[part.event] = part.data;
    }
  }
  if (samples.values && typeof samples.values === "object") samples.values = messagesOf(samples.values);
  if (samples.updates && typeof samples.updates === "object") {
    samples.updates = Object.fromEntries(Object.entries(samples.updates).map(
      ([node, update]) => [node, { messages: update?.messages ?? null }]));
  }
  return { events: names, data: samples };
}

async function collect(stream) {
  const parts = [];
  for await (const part of stream) parts.push({ event: part.event, data: part.data });
  return parts;
}

const out = {};
const thread = await client.threads.create({ metadata: { purpose: "js-parity" } });
const tid = thread.thread_id;
out["threads.create"] = { ...thread, metadata: null };
out["threads.create duplicate"] = await status(client.threads.create({ threadId: tid }));

const created = [];
out["runs.stream values+messages-tuple+updates"] = events(await collect(client.runs.stream(tid, assistantId, {
  input: MSG, streamMode: ["values", "messages-tuple", "updates"], onRunCreated: (meta) => created.push(meta) })));
out["onRunCreated reports the run"] = created.length === 1 && created[0].thread_id === tid
  && (await client.runs.get(tid, created[0].run_id)).run_id === created[0].run_id;

// a resumable background run; its stream joined from the start (lastEventId "-1": replay, then follow)
const run = await client.runs.create(tid, assistantId, { input: MSG, streamResumable: true,
  streamMode: ["values", "messages-tuple"] });
out["runs.create"] = Object.fromEntries(Object.keys(run).sort().filter((k) => k !== "status").map((k) => [k, run[k]]));
out["runs.joinStream"] = events(await collect(client.runs.joinStream(tid, run.run_id, { lastEventId: "-1" })));
out["runs.join"] = messagesOf(await client.runs.join(tid, run.run_id));
out["runs.get"] = { ...(await client.runs.get(tid, run.run_id)), kwargs: null };
// joined again once it finished: from the start, and without a lastEventId
out["runs.joinStream finished"] = events(await collect(client.runs.joinStream(tid, run.run_id, {
  lastEventId: "-1" })));
out["runs.joinStream finished, no lastEventId"] = events(await collect(client.runs.joinStream(tid, run.run_id)));

out["runs.wait"] = messagesOf(await client.runs.wait(tid, assistantId, { input: MSG }));
out["runs.stream values"] = events(await collect(client.runs.stream(tid, assistantId, { input: MSG,
  streamMode: "values" })));
out["runs.stream updates"] = events(await collect(client.runs.stream(tid, assistantId, { input: MSG,
  streamMode: "updates" })));
out["runs.list count"] = (await client.runs.list(tid)).length;
out["threads.search count"] = (await client.threads.search({ metadata: { purpose: "js-parity" } })).length;
out["assistant not found"] = await status(client.runs.wait(tid, "no-such-assistant", { input: MSG }));
out["invalid body"] = await status(client.runs.wait(tid, assistantId, { input: MSG, multitaskStrategy: "nope" }));

const state = await client.threads.getState(tid);
out["threads.getState"] = { ...state, values: messagesOf(state.values) };
const history = await client.threads.getHistory(tid, { limit: 2 });
out["threads.getHistory"] = history.map((h) => ({ ...h, values: messagesOf(h.values), next: null, tasks: null }));
const after = await client.threads.get(tid);
out["threads.get after runs"] = { ...after, values: messagesOf(after.values), metadata: null };

out["runs.stream stateless"] = events(await collect(client.runs.stream(null, assistantId, {
  input: MSG, streamMode: "messages-tuple" })));
out["thread not found"] = await status(client.threads.get("00000000-0000-0000-0000-000000000000"));
out["threads.delete"] = await status(client.threads.delete(tid));

process.stdout.write(JSON.stringify(out));
