// memoryd's plugin for OpenCode: `memory hook install opencode` writes it, `memory hook
// uninstall opencode` removes it (docs/harnesses.md, "OpenCode").
//
// OpenCode runs no hook commands; it loads JavaScript plugins from its plugins directory.
// This one runs memoryd's own hook command, `memory hook opencode EVENT`, with a JSON payload
// on stdin, as Claude Code and Gemini CLI do, and reads the one line of JSON it prints:
//   - a new session: the memory block, added to the system prompt of each of the session's
//     requests (`experimental.chat.system.transform`: an experimental hook; an OpenCode
//     without it never calls it, and the block is then not shown);
//   - before a bash, edit or write call: memoryd denies only a call that goes against a hard
//     rule the user opted into (`context.hard_rules`), and the plugin then throws the rule, as
//     OpenCode's documentation says a plugin blocks a call;
//   - after such a call: the lessons it went against, appended to the tool's output;
//   - the agent's turn done (session.idle), a session deleted: told to memoryd.
// It fails open: a missing `memory`, an error, a timeout (each call has a short deadline) or
// output it cannot read does nothing, and nothing but a hard rule's deny is thrown into
// OpenCode. No dependencies: node:child_process only (Bun, which runs OpenCode, has it).
//
// memoryd-opencode-plugin: uninstall removes this file only while this line is in it.

import { spawn } from "node:child_process"

// The command and environment, written by `memory hook install opencode`.
const COMMAND = ["memory"] // memoryd:command
const ENV = {} // memoryd:env

// Milliseconds a call may take, the `memory` process's start included.
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

// The JSON `memory hook opencode EVENT` printed ({} when it printed nothing), or null: it
// could not be run, failed, took too long or printed something else.
function run(event, payload, deadline = DEADLINE_MS[event] || 2000) {
  return new Promise((resolve) => {
    let finished = false
    let timer = null
    let child
    const finish = (value) => {
      if (finished) return
      finished = true
      if (timer) clearTimeout(timer)
      resolve(value)
    }
    try {
      child = spawn(COMMAND[0], [...COMMAND.slice(1), "hook", "opencode", event], {
        env: { ...process.env, ...ENV },
        stdio: ["pipe", "pipe", "ignore"],
      })
    } catch {
      return finish(null)
    }
    timer = setTimeout(() => {
      try {
        child.kill("SIGKILL")
      } catch {}
      finish(null)
    }, deadline)
    let out = ""
    child.on("error", () => finish(null))
    child.stdout.setEncoding("utf8")
    child.stdout.on("data", (data) => {
      if (out.length < MAX_OUTPUT) out += data
    })
    child.on("close", (code) => {
      if (code !== 0) return finish(null)
      try {
        const text = out.trim()
        const value = text ? JSON.parse(text) : {}
        finish(value && typeof value === "object" ? value : null)
      } catch {
        finish(null)
      }
    })
    child.stdin.on("error", () => {})
    try {
      child.stdin.end(JSON.stringify({ ...payload, hook_event_name: event }))
    } catch {
      finish(null)
    }
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
