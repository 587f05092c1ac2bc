// memoryd's plugin for OpenCode: `memory hook install opencode` writes it, `memory hook
// uninstall opencode` removes it (docs/harnesses.md, "OpenCode").
//
// OpenCode runs no hook commands; it loads JavaScript plugins from its plugins directory.
// This one asks memoryd's own hook command what `memory hook opencode EVENT` would answer, as
// Claude Code and Gemini CLI run it, with a JSON payload, and reads the JSON it answers. The
// plugin lives as long as OpenCode, so one `memory hook opencode --serve` process answers all
// its events (one JSON line each way): a process started per event cost every tool call two
// process starts, tens of milliseconds. It is started at the first event and ends when
// OpenCode does (its stdin closes); one that misses a deadline is stopped, and the next event
// starts another. What it answers:
//   - a new session: the memory block, added to the system prompt of each of the session's
//     requests (`experimental.chat.system.transform`: an experimental hook; an OpenCode
//     without it never calls it, and the block is then not shown);
//   - before a bash, edit or write call: memoryd denies only a call that goes against a hard
//     rule the user opted into (`context.hard_rules`), and the plugin then throws the rule, as
//     OpenCode's documentation says a plugin blocks a call;
//   - after such a call: the lessons it went against, appended to the tool's output;
//   - the agent's turn done (session.idle), a session deleted: told to memoryd.
// It fails open: a missing `memory`, an error, a timeout (each event has a short deadline) or
// output it cannot read does nothing, and nothing but a hard rule's deny is thrown into
// OpenCode. No dependencies: node:child_process only (Bun, which runs OpenCode, has it).
//
// memoryd-opencode-plugin: uninstall removes this file only while this line is in it.

import { spawn } from "node:child_process"

// The command and environment, written by `memory hook install opencode`.
const COMMAND = ["memory"] // memoryd:command
const ENV = {} // memoryd:env

// Milliseconds an event may take, the start of the `memory` process included when there is
// none running yet.
const DEADLINE_MS = {
  "session.created": 5000,
  "tool.execute.before": 2000,
  "tool.execute.after": 2000,
  "session.idle": 3000,
  "session.deleted": 3000,
}
// The tools memoryd's lessons are about (memoryd reads a command, a file written).
const TOOLS = new Set(["bash", "edit", "write"])
const KEEP = 200 // sessions' blocks and pending calls remembered, at most
const MAX_OUTPUT = 1 << 20
const MAX_INPUT = 4 << 20 // what a hook reads of its payload

// The `memory hook opencode --serve` process, while one runs: {child, waiting: id → {answer:
// the function its answer goes to, again: the function that asks another process, once},
// rest: what it wrote after its last whole line}. One for the whole OpenCode process (every
// session and project it serves).
let worker = null
let asked = 0

function start() {
  const child = spawn(COMMAND[0], [...COMMAND.slice(1), "hook", "opencode", "--serve"], {
    env: { ...process.env, ...ENV },
    stdio: ["pipe", "pipe", "ignore"],
  })
  const started = { child, waiting: new Map(), rest: "" }
  const end = () => stop(started)
  child.on("error", end)
  child.on("close", end)
  child.stdin.on("error", end)
  child.stdout.setEncoding("utf8")
  child.stdout.on("data", (data) => {
    started.rest += data
    let at
    while ((at = started.rest.indexOf("\n")) >= 0) {
      const line = started.rest.slice(0, at)
      started.rest = started.rest.slice(at + 1)
      let reply = null
      try {
        reply = JSON.parse(line)
      } catch {}
      const asking = reply && started.waiting.get(reply.id)
      if (asking) asking.answer(typeof reply.output === "string" ? reply.output : null)
    }
    if (started.rest.length > MAX_OUTPUT) stop(started)
  })
  // waiting for the next event keeps nothing alive: OpenCode quits when it will, and the
  // process then sees its stdin close (an event being answered keeps its timer alive)
  for (const handle of [child, child.stdin, child.stdout]) {
    try {
      handle.unref?.()
    } catch {}
  }
  return started
}

// The process ended, or is stopped: what it was asked and did not answer goes to another
// (a process that ended as it was asked: its answer is still due, within the deadline).
function stop(which) {
  if (worker === which) worker = null
  const waiting = [...which.waiting.values()]
  which.waiting.clear()
  for (const asking of waiting) (asking.again || asking.answer)(null)
  try {
    if (which.child.exitCode === null && which.child.signalCode === null) which.child.kill("SIGKILL")
  } catch {}
}

// What `memory hook opencode EVENT` answers, as JSON ({} when it answers nothing), or null: it
// could not be run, failed, took too long or answered something else.
function run(event, payload, deadline = DEADLINE_MS[event] || 2000) {
  return new Promise((resolve) => {
    const id = ++asked
    let finished = false
    let timer = null
    let current = null
    const finish = (output) => {
      if (finished) return
      finished = true
      if (timer) clearTimeout(timer)
      if (current) current.waiting.delete(id)
      try {
        const text = typeof output === "string" ? output.trim() : null
        const value = text === null ? null : text ? JSON.parse(text) : {}
        resolve(value && typeof value === "object" ? value : null)
      } catch {
        resolve(null)
      }
    }
    const line = JSON.stringify({ id, event, payload: { ...payload, hook_event_name: event } })
    if (line.length > MAX_INPUT) return finish(null)
    const ask = (again) => {
      let into = null
      try {
        into = current = worker || (worker = start())
        into.waiting.set(id, { answer: finish, again: again ? () => ask(false) : null })
        into.child.stdin.write(line + "\n")
      } catch {
        if (into && into.waiting.has(id)) stop(into)
        else if (again) ask(false)
        else finish(null)
      }
    }
    timer = setTimeout(() => {
      finish(null)
      if (current) stop(current) // a process that misses a deadline is not asked again
    }, deadline)
    ask(true)
  })
}

function text(answer, field) {
  const value = answer && answer[field]
  return typeof value === "string" && value ? value : null
}

function remember(map, key, value) {
  map.set(key, value)
  while (map.size > KEEP) map.delete(map.keys().next().value)
  return value
}

async function server(input) {
  const cwd = (input && (input.worktree || input.directory)) || process.cwd()
  const blocks = new Map() // session id → Promise of its block (null: none)
  const pending = new Map() // call id → the call's arguments (older OpenCode omits them after)

  // The session's block, asked for once (registering the session with memoryd).
  const block = (session) =>
    blocks.get(session) ||
    remember(
      blocks,
      session,
      run("session.created", { session_id: session, cwd }).then((answer) => text(answer, "context")),
    )

  const call = (event, input, args) => ({
    session_id: input.sessionID,
    cwd,
    tool_name: input.tool,
    tool_input: args && typeof args === "object" ? args : {},
    tool_use_id: input.callID,
  })

  return {
    event: async ({ event } = {}) => {
      try {
        const type = event && event.type
        // `properties` on the plugin's bus; some newer events carry `data` instead
        const properties = (event && (event.properties || event.data)) || {}
        if (type === "session.created" && properties.info && properties.info.id) {
          await block(properties.info.id)
        } else if (type === "session.idle" && properties.sessionID) {
          await run("session.idle", { session_id: properties.sessionID, cwd })
        } else if (type === "session.deleted" && properties.info && properties.info.id) {
          blocks.delete(properties.info.id)
          await run("session.deleted", { session_id: properties.info.id, cwd })
        }
      } catch {}
    },
    "experimental.chat.system.transform": async (input, output) => {
      try {
        if (!input || !input.sessionID || !output || !Array.isArray(output.system)) return
        const shown = await block(input.sessionID)
        if (shown) output.system.push(shown)
      } catch {}
    },
    "tool.execute.before": async (input, output) => {
      let deny = null
      try {
        if (!input || !TOOLS.has(input.tool)) return
        const args = output && output.args
        if (input.callID) remember(pending, input.callID, args)
        deny = text(await run("tool.execute.before", call("tool.execute.before", input, args)), "deny")
      } catch {
        return
      }
      if (deny) throw new Error(deny) // a hard rule the user set: OpenCode blocks the call
    },
    "tool.execute.after": async (input, output) => {
      try {
        if (!input || !TOOLS.has(input.tool)) return
        const args = input.args || pending.get(input.callID)
        pending.delete(input.callID)
        const lesson = text(await run("tool.execute.after", call("tool.execute.after", input, args)), "context")
        if (lesson && output && typeof output.output === "string") {
          output.output = `${output.output}\n\n${lesson}`
        }
      } catch {}
    },
  }
}

// OpenCode's plugin module: its only export (an older loader calls every export as a plugin),
// with an id (a plugin loaded from a file must have one) and the server.
export default { id: "memoryd", server }
