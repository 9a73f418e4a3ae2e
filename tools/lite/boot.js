// The browser edition's help around JupyterLab (tools/build_lite.py loads it in lab/index.html).
//
// * While a notebook's Python kernel boots (Pyodide and the course's packages: 5-15 s the first
//   time), a box says so and counts the seconds; a run clicked meanwhile (Run All, Shift+Enter, the
//   toolbar's ▶, the Run menu, whose items JupyterLab would grey out until there is a kernel) waits
//   in a queue and runs, in order, once the kernel is idle, instead of being lost. So does a run
//   chosen before the notebook the address names (?path=….ipynb) has even opened.
// * reset() in the kernel calls window.piCourseRevert(path): an editor open on that file reloads it
//   (no stale tab whose save would undo the reset).
// * A file opened from the answer key (pi_course/course/target-05/) says in its toolbar: 先别看.
// It needs window.jupyterapp (jupyter-lite.json: exposeAppInBrowser) and loads nothing.
(function () {
  "use strict";
  const RUNS = /^(notebook:run-|runmenu:run)/; // every way to run cells; restarts are left alone
  const TARGET = /(^|\/)pi_course\/course\/target-05\//;
  const READY = new Set(["idle", "busy"]);
  const queued = []; // [panel, run] in the order they were clicked; panel null: the one opening
  const OPEN_WAIT_MS = 120000; // how long a run waits for the address's notebook to open
  let opening = addressedNotebook(); // that notebook's path, until it is open (or never will be)
  let box = null;
  let bootStarted = null;

  function status(panel) {
    const kernel = panel && panel.sessionContext && panel.sessionContext.session && panel.sessionContext.session.kernel;
    return kernel ? kernel.status : "unknown";
  }

  function isNotebook(widget) {
    return Boolean(widget && widget.sessionContext && widget.content && widget.content.widgets);
  }

  function say(text) {
    if (!box) {
      box = document.createElement("div");
      box.id = "pi-course-boot";
      box.setAttribute("role", "status");
      box.style.cssText =
        "position:fixed;right:16px;bottom:36px;z-index:10000;max-width:30em;padding:8px 12px;" +
        "border-radius:6px;font:13px/1.5 system-ui,sans-serif;box-shadow:0 2px 8px rgba(0,0,0,.25);" +
        "background:var(--jp-layout-color2,#f6f8fa);color:var(--jp-ui-font-color1,#1f2328);" +
        "border:1px solid var(--jp-border-color1,#d0d7de);";
      document.body.appendChild(box);
    }
    box.textContent = text;
    box.hidden = !text;
  }

  function addressedNotebook() {
    const path = new URLSearchParams(window.location.search).get("path");
    return path && path.endsWith(".ipynb") ? path : null;
  }

  function tick(app) {
    const panel = notebookOf(app);
    if (opening && isNotebook(panel) && panel.context.path === opening) {
      opening = null;
    }
    const waiting = [];
    for (const item of queued.splice(0)) {
      item[0] = item[0] || (isNotebook(panel) ? panel : null);
      if (!item[0] && !opening) {
        item[1](null); // the notebook never opened: nothing to run it in
        continue;
      }
      if (READY.has(status(item[0]))) {
        item[1](item[0]);
      } else {
        waiting.push(item);
      }
    }
    queued.push(...waiting);
    if (isNotebook(panel) && !READY.has(status(panel)) && status(panel) !== "dead") {
      bootStarted = bootStarted || Date.now();
      const seconds = Math.round((Date.now() - bootStarted) / 1000);
      const runs = queued.length ? `；已排队 ${queued.length} 个运行，内核就绪后依次执行` : "；这期间点的运行会排队，不会丢";
      say(`Python 内核启动中（Pyodide 和课程的包；第一次要 5–15 秒）… ${seconds} 秒${runs}`);
    } else if (opening && queued.length) {
      say(`笔记本打开中……已排队 ${queued.length} 个运行，内核就绪后依次执行`);
    } else {
      bootStarted = null;
      say(queued.length ? `已排队 ${queued.length} 个运行：等它们的笔记本的内核就绪` : "");
    }
  }

  // The notebook a run is for: the current widget, or, before the shell has made one current (the
  // first seconds of a fresh tab), the notebook open in the main area.
  function notebookOf(app) {
    const current = app.shell.currentWidget;
    if (isNotebook(current)) {
      return current;
    }
    const open = [...app.shell.widgets("main")].filter(isNotebook);
    return open.length ? open[open.length - 1] : current;
  }

  // A run chosen now would be lost: the notebook's kernel is booting, or the notebook is not open yet.
  function booting(panel) {
    if (!isNotebook(panel)) {
      return Boolean(opening);
    }
    return !READY.has(status(panel)) && status(panel) !== "dead";
  }

  function queueRuns(app) {
    // While there is no notebook or no kernel yet, JupyterLab greys out the Run menu's items: a
    // click on one would do nothing at all. They stay enabled until then, so the click is queued.
    const isEnabled = app.commands.isEnabled.bind(app.commands);
    app.commands.isEnabled = function (id, args) {
      return isEnabled(id, args) || (RUNS.test(id) && booting(notebookOf(app)));
    };
    const execute = app.commands.execute.bind(app.commands);
    app.commands.execute = function (id, args) {
      const current = notebookOf(app);
      const panel = isNotebook(current) ? current : null;
      if (!RUNS.test(id) || !booting(current)) {
        return execute(id, args);
      }
      return new Promise((resolve, reject) => {
        queued.push([
          panel,
          (notebook) => {
            if (!notebook) {
              resolve(undefined);
              return;
            }
            if (app.shell.currentWidget !== notebook) {
              app.shell.activateById(notebook.id);
            }
            execute(id, args).then(resolve, reject);
          },
        ]);
        tick(app);
      });
    };
  }

  function revert(app, path) {
    let reverted = 0;
    for (const widget of app.shell.widgets("main")) {
      if (widget.context && widget.context.path === path) {
        void widget.context.revert();
        reverted += 1;
      }
    }
    return reverted;
  }

  function markTarget(widget) {
    if (!widget || !widget.context || !TARGET.test(widget.context.path) || !widget.content) {
      return;
    }
    if (widget.node.querySelector(".pi-course-target")) {
      return;
    }
    const note = document.createElement("div");
    note.className = "pi-course-target";
    note.setAttribute("role", "note");
    note.textContent =
      "先别看：这是第 05 章的答案（target）。先在 practice/pi_course/ 里自己写，检查点打印「完成」之后再来对照；这里的文件不要改。";
    note.style.cssText =
      "position:absolute;top:0;left:0;right:0;z-index:1;padding:6px 12px;font-weight:600;" +
      "color:var(--jp-error-color1,#cf222e);background:var(--jp-layout-color2,#f6f8fa);" +
      "border-bottom:1px solid var(--jp-border-color1,#d0d7de);";
    const content = widget.content;
    content.node.insertBefore(note, content.node.firstChild);
    // The editor is laid out inside the content's padding: room for the note above it.
    content.node.style.paddingTop = `${note.offsetHeight}px`;
    content.fit();
    content.update();
    widget.title.label = `先别看·${widget.title.label}`; // two tabs named outbound.py: this one is the answer
  }

  function start(app) {
    window.piCourseRevert = (path) => revert(app, path);
    queueRuns(app);
    app.shell.currentChanged.connect((_, change) => markTarget(change.newValue));
    app.restored.then(() => {
      for (const widget of app.shell.widgets("main")) {
        markTarget(widget);
      }
    });
    setInterval(() => tick(app), 250);
    setTimeout(() => {
      opening = null;
    }, OPEN_WAIT_MS);
  }

  const wait = setInterval(() => {
    if (window.jupyterapp && window.jupyterapp.shell && window.jupyterapp.commands) {
      clearInterval(wait);
      start(window.jupyterapp);
    }
  }, 100);
})();
