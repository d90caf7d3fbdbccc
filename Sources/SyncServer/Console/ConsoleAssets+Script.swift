extension ConsoleAssets {
    /// The console's script: views drawn from the admin endpoints, text set with
    /// `textContent` only (the data is the users', never markup).
    static let script = #"""
        "use strict";
        const state = { key: sessionStorage.getItem("psync-admin-key"), timer: null, live: null };
        const $ = (id) => document.getElementById(id);

        function el(tag, attributes = {}, ...children) {
          const node = document.createElement(tag);
          for (const [name, value] of Object.entries(attributes)) {
            if (name === "text") node.textContent = value;
            else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
            else node.setAttribute(name, value);
          }
          for (const child of children) node.append(child);
          return node;
        }

        async function api(path, options = {}) {
          const response = await fetch(path, { ...options, headers: { Authorization: `Bearer ${state.key}`, ...(options.headers || {}) } });
          if (response.status === 401 || response.status === 403) { signOut("The key is not an admin key."); throw new Error("not an admin"); }
          if (!response.ok) {
            let message = `${response.status}`;
            // Every error answer is {"error": {"code", "message"}} (PROTOCOL.md, "Error codes").
            try { const body = await response.json(); if (body && body.error) message = `${body.error.code}: ${body.error.message}`; } catch {}
            throw new Error(message);
          }
          return response.status === 204 ? null : response.json();
        }

        function status(text, bad = false) { const node = $("status"); node.textContent = text; node.className = bad ? "error" : "muted"; }
        function stopTimers() { clearInterval(state.timer); state.timer = null; state.live = null; }
        function every(ms, work) { work(); state.timer = setInterval(work, ms); }

        function signOut(message = "") {
          stopTimers();
          sessionStorage.removeItem("psync-admin-key");
          state.key = null;
          $("nav").hidden = true;
          $("view").replaceChildren();
          $("sign-in-view").hidden = false;
          $("sign-in-error").textContent = message;
        }

        async function signIn(event) {
          event.preventDefault();
          state.key = $("api-key").value.trim();
          try {
            const response = await fetch("/v1/admin/overview", { headers: { Authorization: `Bearer ${state.key}` } });
            if (!response.ok) { signOut(response.status === 403 ? "That key is not an admin key." : "That key is not valid."); return; }
          } catch (error) { signOut(`The server did not answer: ${error.message}`); return; }
          sessionStorage.setItem("psync-admin-key", state.key);
          $("api-key").value = "";
          $("sign-in-view").hidden = true;
          $("nav").hidden = false;
          route();
        }

        function route() {
          if (!state.key) { signOut(); return; }
          stopTimers();
          const hash = decodeURIComponent(location.hash.slice(1)) || "overview";
          const [view, ...rest] = hash.split("/");
          for (const link of document.querySelectorAll("nav a")) link.classList.toggle("active", link.id === `nav-${view === "partition" ? "partitions" : view}`);
          const views = { overview, partitions, partition: () => partition(rest.join("/")), triggers, users };
          (views[view] || overview)();
        }

        // Overview: cards and the last 15 minutes of this instance.
        // A chart of samples over time: its title with the latest value, the line, and a time
        // axis from the first sample's time to the last's (local time), with the peak named.
        function chart(title, points, from, to) {
          const width = 300, height = 100;
          const peak = Math.max(0, ...points);
          const scale = Math.max(1, peak);
          const step = points.length > 1 ? width / (points.length - 1) : width;
          const line = points.map((value, index) => `${(index * step).toFixed(1)},${(height - (value / scale) * (height - 8) - 4).toFixed(1)}`).join(" ");
          const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
          svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
          svg.setAttribute("preserveAspectRatio", "none");
          const polyline = document.createElementNS("http://www.w3.org/2000/svg", "polyline");
          polyline.setAttribute("points", line);
          svg.append(polyline);
          const shown = (value) => Number.isInteger(value) ? String(value) : value.toFixed(1);
          const last = points.length ? points[points.length - 1] : 0;
          const time = (iso) => iso ? new Date(iso).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" }) : "";
          return el("div", { class: "chart" }, el("div", { text: `${title}: ${shown(last)} now · peak ${shown(peak)}` }), svg,
            el("div", { class: "axis" }, el("span", { text: time(from) }), el("span", { text: time(to) })));
        }

        function rates(samples, field) {
          const rates = [];
          for (let index = 1; index < samples.length; index++) {
            const seconds = (Date.parse(samples[index].at) - Date.parse(samples[index - 1].at)) / 1000;
            rates.push(seconds > 0 ? Math.max(0, samples[index][field] - samples[index - 1][field]) / seconds : 0);
          }
          return rates;
        }

        function overview() {
          const view = $("view");
          view.replaceChildren(el("h2", { text: "Overview" }), el("p", { class: "muted", text: "This instance, the last 15 minutes; refreshed every 5 s." }));
          const body = el("div", { id: "overview" });
          view.append(body);
          every(5000, async () => {
            try {
              const data = await api("/v1/admin/overview");
              const samples = data.samples;
              const now = samples[samples.length - 1];
              const errors = {};
              for (const [code, count] of Object.entries(now.errors)) errors[code] = count;
              const uploads = rates(samples, "uploads"), pushed = rates(samples, "changesPushed");
              const lag = data.triggers.reduce((sum, trigger) => sum + trigger.lag, 0);
              const card = (label, value, id) => el("div", { class: "card", id }, el("div", { class: "value", text: String(value) }), el("div", { class: "label", text: label }));
              body.replaceChildren(
                el("div", { class: "cards" },
                  card("instances", data.instances.length, "card-instances"),
                  card("users' sessions, every instance", data.sessionsEverywhere, "card-sessions-everywhere"),
                  card("sessions here", now.sessions, "card-sessions"),
                  card("subscriptions here", now.subscriptions, "card-subscriptions"),
                  card("uploads/s", (uploads[uploads.length - 1] || 0).toFixed(1), "card-uploads"),
                  card("changes pushed/s", (pushed[pushed.length - 1] || 0).toFixed(1), "card-pushed"),
                  card("trigger lag (events)", lag, "card-lag")),
                el("div", { class: "charts" },
                  chart("sessions", samples.map((sample) => sample.sessions), samples[0]?.at, samples[samples.length - 1]?.at),
                  chart("subscriptions", samples.map((sample) => sample.subscriptions), samples[0]?.at, samples[samples.length - 1]?.at),
                  chart("uploads/s", uploads, samples[1]?.at, samples[samples.length - 1]?.at),
                  chart("changes pushed/s", pushed, samples[1]?.at, samples[samples.length - 1]?.at)),
                el("h3", { text: "Errors by code, since this instance started" }),
                table(["code", "count"], Object.entries(errors).map(([code, count]) => [code, count])),
                el("h3", { text: "Instances" }),
                table(["name", "lease until"], data.instances.map((instance) => [instance.name + (instance.name === data.instance ? " (this one)" : ""), new Date(instance.expires).toLocaleString()])));
              status(`Updated ${new Date().toLocaleTimeString()}`);
            } catch (error) { status(error.message, true); }
          });
        }

        function table(headings, rows, attributes = {}) {
          return el("table", attributes,
            el("thead", {}, el("tr", {}, ...headings.map((heading) => el("th", { text: heading })))),
            el("tbody", {}, ...rows.map((row) => row instanceof Node ? row : el("tr", {}, ...row.map((cell) => cell instanceof Node ? el("td", {}, cell) : el("td", { text: String(cell) }))))));
        }

        // Partitions: search by key and value.
        function partitions() {
          const view = $("view");
          const input = el("input", { id: "partition-search", placeholder: "key=value… (a prefix)", value: sessionStorage.getItem("psync-partition-search") || "" });
          const results = el("div", { id: "partition-results" });
          const search = async () => {
            sessionStorage.setItem("psync-partition-search", input.value);
            try {
              const found = await api(`/v1/admin/partitions?prefix=${encodeURIComponent(input.value)}&limit=100`);
              results.replaceChildren(table(["partition", "version", "objects", "bytes", "subscribers here"], found.map((row) => [
                el("a", { href: `#partition/${encodeURIComponent(row.partition)}`, text: row.partition }), row.version, row.objects, row.bytes, row.subscribers])));
              status(`${found.length} partition(s)`);
            } catch (error) { status(error.message, true); }
          };
          view.replaceChildren(el("h2", { text: "Partitions" }),
            el("form", { class: "toolbar", onsubmit: (event) => { event.preventDefault(); search(); } }, input, el("button", { id: "partition-search-button", type: "submit", text: "Search" })),
            results);
          search();
        }

        // One partition: its objects, paged, filtered by collection, and live.
        // A body in a line: the fields a person reads first (a message's text, a page's title),
        // then the rest, cut at 120 characters.
        function preview(body) {
          if (body === null || typeof body !== "object") return JSON.stringify(body);
          const first = ["text", "markdown", "title", "displayName", "name", "userName", "email", "author"];
          const keys = [...first.filter((key) => key in body), ...Object.keys(body).filter((key) => !first.includes(key)).sort()];
          const text = keys.map((key) => `${key}: ${JSON.stringify(body[key])}`).join(", ");
          return text.length > 120 ? text.slice(0, 119) + "…" : text;
        }

        function partition(name) {
          const view = $("view");
          const filter = el("input", { id: "collection-filter", placeholder: "collection (all)" });
          const rows = el("tbody", { id: "object-rows" });
          const more = el("button", { id: "load-more", type: "button", text: "Load more", hidden: "" });
          const progress = el("span", { id: "load-progress", class: "muted" });
          const json = el("pre", { id: "object-json", text: "Select an object." });
          const objects = new Map();
          let selected = null, next = null, cursor = null;
          const keyOf = (object) => `${object.collection}/${object.id}`;
          const counted = () => { progress.textContent = `${objects.size} object(s) loaded${next ? ", more to load" : ""}`; };
          const show = (object, changed) => {
            const key = keyOf(object);
            let row = rows.querySelector(`tr[data-key="${CSS.escape(key)}"]`);
            if (object.deleted) { row?.remove(); objects.delete(key); if (selected === key) json.textContent = "(deleted)"; counted(); return; }
            objects.set(key, object);
            const cells = [object.collection, object.id, object.version, preview(object.body)];
            const fresh = el("tr", { "data-key": key, class: changed ? "changed" : "", onclick: () => select(key) }, ...cells.map((cell) => el("td", { text: String(cell) })));
            if (row) row.replaceWith(fresh); else rows.append(fresh);
            if (selected === key) { fresh.classList.add("selected"); json.textContent = JSON.stringify(object.body, null, 2); }
            counted();
          };
          const select = (key) => {
            selected = key;
            for (const row of rows.children) row.classList.toggle("selected", row.dataset.key === key);
            json.textContent = JSON.stringify(objects.get(key)?.body ?? null, null, 2);
          };
          const load = async (first) => {
            const collection = filter.value.trim();
            const query = `limit=200${collection ? `&collection=${encodeURIComponent(collection)}` : ""}${!first && next ? `&after=${encodeURIComponent(next)}` : ""}`;
            const page = await api(`/v1/admin/partitions/${encodeURIComponent(name)}/objects?${query}`);
            if (first) { rows.replaceChildren(); objects.clear(); cursor = page.cursor; }
            for (const object of page.objects) show(object, false);
            next = page.next;
            more.hidden = !next;
            counted();
          };
          const poll = async () => {
            if (!cursor) return;
            try {
              let batch;
              do {
                batch = await api(`/v1/admin/partitions/${encodeURIComponent(name)}/changes?cursor=${encodeURIComponent(cursor)}`);
                if (batch.reset) { await load(true); return; }
                const collection = filter.value.trim();
                for (const object of batch.objects) if (!collection || object.collection === collection) show(object, true);
                cursor = batch.cursor;
              } while (!batch.upToDate);
              status(`Live · ${new Date().toLocaleTimeString()}`);
            } catch (error) { status(error.message, true); }
          };
          view.replaceChildren(el("h2", { id: "partition-title", text: name }),
            el("form", { class: "toolbar", onsubmit: (event) => { event.preventDefault(); load(true).catch((error) => status(error.message, true)); } },
              filter, el("button", { type: "submit", text: "Filter" }), progress),
            el("div", { class: "row" },
              el("div", {}, el("table", {}, el("thead", {}, el("tr", {}, ...["collection", "id", "version", "body"].map((heading) => el("th", { text: heading })))), rows), more),
              el("div", {}, el("h3", { text: "Object" }), json)));
          more.addEventListener("click", () => load(false).catch((error) => status(error.message, true)));
          // Live from the head the first page was read at, unless the operator went elsewhere meanwhile.
          const visit = {};
          state.live = visit;
          load(true).then(() => { if (state.live === visit) state.timer = setInterval(poll, 1000); }).catch((error) => status(error.message, true));
        }

        // Triggers: progress, lag, leases; dead letters and their retry.
        function triggers() {
          const view = $("view");
          const list = el("div", { id: "trigger-list" });
          const letters = el("div", { id: "dead-letters" });
          const progress = el("span", { id: "retry-progress", class: "muted" });
          const retryAll = el("button", { id: "retry-all", type: "button", text: "Retry all" });
          const previous = new Map();
          const eventJSON = el("pre", { id: "event-json", hidden: "" });
          const showEvent = async (position) => {
            try { eventJSON.textContent = JSON.stringify(await api(`/v1/admin/events/${position}`), null, 2); eventJSON.hidden = false; }
            catch (error) { status(error.message, true); }
          };
          const refresh = async () => {
            try {
              const reports = await api("/v1/admin/triggers");
              const now = Date.now();
              list.replaceChildren(table(["trigger", "position", "lag", "lease holder", "events/s", "dead letters"], reports.map((report) => {
                const before = previous.get(report.name);
                const rate = before ? ((report.position - before.position) / ((now - before.at) / 1000)).toFixed(1) : "…";
                previous.set(report.name, { position: report.position, at: now });
                return [report.name, report.position, report.lag, report.leaseHolder ?? "none", rate, report.deadLetters];
              })));
              const open = await api("/v1/admin/dead-letters");
              letters.replaceChildren(open.length === 0 ? el("p", { id: "no-dead-letters", class: "ok", text: "No dead letters." }) :
                table(["id", "trigger", "event", "attempts", "error", "since", ""], open.map((letter) => [letter.id, letter.trigger,
                  el("a", { href: "#", class: "event", text: String(letter.position), onclick: (event) => { event.preventDefault(); showEvent(letter.position); } }),
                  letter.attempts, letter.error, letter.created,
                  el("button", { type: "button", class: "retry", "data-id": String(letter.id), text: "Retry", onclick: () => retry([letter]) })])));
              retryAll.disabled = open.length === 0;
              status(`Updated ${new Date().toLocaleTimeString()}`);
            } catch (error) { status(error.message, true); }
          };
          const retry = async (chosen) => {
            if (!confirm(chosen.length === 1 ? `Retry dead letter ${chosen[0].id} (${chosen[0].trigger})?` : `Retry all ${chosen.length} dead letters?`)) return;
            let done = 0, failed = 0;
            for (const letter of chosen) {
              try { await api(`/v1/admin/dead-letters/${letter.id}/retry`, { method: "POST" }); done++; } catch { failed++; }
              progress.textContent = `${done + failed}/${chosen.length} retried${failed ? `, ${failed} failed again` : ""}`;
            }
            await refresh();
          };
          retryAll.addEventListener("click", async () => retry(await api("/v1/admin/dead-letters")));
          view.replaceChildren(el("h2", { text: "Triggers" }), list, el("h3", { text: "Dead letters" }), el("div", { class: "toolbar" }, retryAll, progress), letters, eventJSON);
          every(3000, refresh);
        }

        // Users and sessions.
        function users() {
          const view = $("view");
          const input = el("input", { id: "user-search", placeholder: "email (a prefix)" });
          const results = el("div", { id: "user-results" });
          const act = async (user, what) => {
            if (what === "revoke") {
              if (!confirm(`End every session of ${user.email}? They can sign in again.`)) return;
              const result = await api(`/v1/admin/users/${encodeURIComponent(user.id)}/revoke-sessions`, { method: "POST" });
              status(`${result.logins} login(s) of ${user.email} ended`);
            } else {
              if (!confirm(`Delete the account ${user.email} and end its sessions? This cannot be undone.`)) return;
              await api(`/v1/admin/users/${encodeURIComponent(user.id)}`, { method: "DELETE" });
              status(`${user.email} deleted`);
            }
            search();
          };
          const search = async () => {
            try {
              const found = await api(`/v1/admin/users?email=${encodeURIComponent(input.value.trim())}&limit=100`);
              results.replaceChildren(table(["email", "id", "since", "presence", "sessions", ""], found.map((user) => [user.email, user.id, user.created,
                user.online ? "on-line" : "off-line",
                Object.entries(user.sessions).map(([instance, count]) => `${count} on ${instance}`).join(", ") || "none",
                el("span", {}, el("button", { type: "button", class: "revoke", text: "Revoke sessions", onclick: () => act(user, "revoke").catch((error) => status(error.message, true)) }), " ",
                  el("button", { type: "button", class: "delete", text: "Delete account", onclick: () => act(user, "delete").catch((error) => status(error.message, true)) }))])));
            } catch (error) { status(error.message, true); }
          };
          view.replaceChildren(el("h2", { text: "Users and sessions" }),
            el("form", { class: "toolbar", onsubmit: (event) => { event.preventDefault(); search(); } }, input, el("button", { id: "user-search-button", type: "submit", text: "Find" })), results);
          // Presence changes on its own: the list is read again every 5 s.
          every(5000, search);
        }

        window.addEventListener("hashchange", route);
        window.addEventListener("DOMContentLoaded", () => {
          $("sign-in-form").addEventListener("submit", signIn);
          $("sign-out").addEventListener("click", () => signOut());
          if (state.key) { $("nav").hidden = false; route(); } else signOut();
        });
        """#
}
