/// The console's page, style sheet and script, served from the binary (no CDN, no build
/// step). The page holds no data: everything it shows comes from the admin endpoints, with the
/// admin API key the operator types in (kept in the tab's session storage).
enum ConsoleAssets {
    static let page = #"""
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>PartitionSync console</title>
        <link rel="icon" href="data:,">
        <link rel="stylesheet" href="/console/app.css">
        <script src="/console/app.js" defer></script>
        </head>
        <body>
        <header>
          <h1>PartitionSync</h1>
          <nav id="nav" hidden>
            <a href="#overview" id="nav-overview">Overview</a>
            <a href="#partitions" id="nav-partitions">Partitions</a>
            <a href="#triggers" id="nav-triggers">Triggers</a>
            <a href="#users" id="nav-users">Users and sessions</a>
            <button id="sign-out" type="button">Sign out</button>
          </nav>
        </header>
        <main>
          <section id="sign-in-view" hidden>
            <h2>Sign in</h2>
            <p>An admin API key (<code>psync apikey create --name admin</code>).</p>
            <form id="sign-in-form">
              <input id="api-key" type="password" autocomplete="off" placeholder="psk_…" required>
              <button id="sign-in" type="submit">Sign in</button>
            </form>
            <p id="sign-in-error" class="error"></p>
          </section>
          <section id="view"></section>
        </main>
        <footer><span id="status"></span></footer>
        </body>
        </html>
        """#

    /// The browser tab's icon (asked for at `/favicon.ico` by every page of the server's origin).
    static let icon = #"""
        <svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="6" fill="#2f6fdf"/><text x="16" y="23" font-family="sans-serif" font-size="20" font-weight="700" fill="#fff" text-anchor="middle">P</text></svg>
        """#

    static let style = #"""
        :root { --fg: #1d2330; --muted: #667085; --line: #d9dee7; --accent: #2f6fdf; --bad: #c0392b; --good: #2e8b57; }
        * { box-sizing: border-box; }
        [hidden] { display: none !important; }
        body { margin: 0; font: 14px/1.45 system-ui, sans-serif; color: var(--fg); background: #f6f7fa; }
        header { display: flex; align-items: center; gap: 2rem; padding: .6rem 1.2rem; background: #fff; border-bottom: 1px solid var(--line); }
        header h1 { font-size: 1.1rem; margin: 0; }
        nav { display: flex; gap: 1rem; align-items: center; flex: 1; flex-wrap: wrap; }
        nav a { color: var(--fg); text-decoration: none; padding: .2rem .4rem; border-radius: 4px; }
        nav a.active { background: var(--accent); color: #fff; }
        nav button { margin-left: auto; }
        main { padding: 1.2rem; }
        footer { padding: .4rem 1.2rem; color: var(--muted); font-size: 12px; }
        h2 { margin-top: 0; font-size: 1.2rem; }
        .cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(160px, 1fr)); gap: .8rem; margin-bottom: 1rem; }
        .card { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: .6rem .8rem; }
        .card .value { font-size: 1.5rem; font-weight: 600; }
        .card .label { color: var(--muted); font-size: 12px; }
        .charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(320px, 1fr)); gap: .8rem; }
        .chart { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: .5rem; }
        .chart svg { width: 100%; height: 110px; }
        .chart polyline { fill: none; stroke: var(--accent); stroke-width: 2; }
        table { border-collapse: collapse; width: 100%; background: #fff; border: 1px solid var(--line); }
        th, td { text-align: left; padding: .35rem .6rem; border-bottom: 1px solid var(--line); vertical-align: top; overflow-wrap: anywhere; }
        .chart .axis { display: flex; justify-content: space-between; color: var(--muted); font-size: 11px; }
        th { background: #eef1f6; font-weight: 600; }
        tr.changed td { background: #fff6d6; }
        tr.selected td { background: #e3ecfb; }
        td.num { text-align: right; font-variant-numeric: tabular-nums; }
        pre { background: #fff; border: 1px solid var(--line); padding: .6rem; overflow: auto; max-height: 420px; }
        .row { display: flex; gap: 1rem; align-items: flex-start; }
        .row > * { flex: 1; min-width: 0; }
        .toolbar { display: flex; gap: .6rem; align-items: center; margin-bottom: .6rem; flex-wrap: wrap; }
        .error { color: var(--bad); }
        .ok { color: var(--good); }
        .muted { color: var(--muted); }
        button { cursor: pointer; }
        a { color: var(--accent); }
        @media (max-width: 700px) {
          header { flex-direction: column; align-items: flex-start; gap: .4rem; }
          nav { gap: .4rem; }
          nav button { margin-left: 0; }
          .row { flex-direction: column; }
          .row > * { width: 100%; }
          main { padding: .6rem; }
        }
        """#
}
