"""``DeerFlowExtension``: the ``deerflow`` Jupyter server extension application."""

from __future__ import annotations

import asyncio
import gc
import os

from jupyter_server.extension.application import ExtensionApp
from traitlets import Bool, Float, Unicode

from jupyter_ext.service import DeerFlowService

__all__ = ["DeerFlowExtension"]


class DeerFlowExtension(ExtensionApp):
    """Serves the DeerFlow gateway under ``{base_url}deerflow/api`` and runs agents in the server."""

    name = "deerflow"
    load_other_extensions = True

    config_path = Unicode(None, allow_none=True, config=True,
                          help="config.yaml to use (default: DEER_FLOW_CONFIG_PATH, then the usual search).")
    home = Unicode(None, allow_none=True, config=True,
                   help="Data directory (default: DEER_FLOW_HOME > config 'home' > ~/.deer-flow).")
    default_sandbox = Unicode(None, allow_none=True, config=True,
                              help="Sandbox provider for runs ('local', 'bubblewrap', 'docker' or 'module:Class'); "
                                   "overrides config.yaml's sandbox.use.")
    anonymous_user_id = Unicode("default", config=True,
                                help="user_id of requests whose identity is anonymous (plain token auth, no hub).")

    scheduler = Bool(True, config=True,
                     help="Run the scheduler loop (scheduled runs, /scheduled-tasks) in this server. Several "
                          "servers on one database may all run it: each tick is dispatched once.")
    scheduler_poll_seconds = Float(15.0, config=True,
                                   help="Seconds between two scheduler passes (how late a tick may start).")

    gc_freeze = Bool(True, config=True,
                     help="Once started, move the objects loaded so far (the server, LangChain, the runtime) to the "
                          "garbage collector's permanent generation (gc.freeze()), so full collections during many "
                          "concurrent runs scan what the runs create, not the whole server heap.")

    service: DeerFlowService | None = None

    def initialize_settings(self) -> None:
        """Start the runtime (its own loop) and recover runs left active by a crashed server."""
        self.service = DeerFlowService.start(config_path=self.config_path or os.environ.get("DEER_FLOW_CONFIG_PATH"),
                                             home=self.home, sandbox=self.default_sandbox)
        recovered = self.service.engine.recovered_runs
        if recovered:
            self.log.warning("deerflow: recovered %d run(s) orphaned by a previous server: %s",
                             len(recovered), ", ".join(recovered))
        if self.scheduler:  # a kernel is not a scheduler: the server process is
            # a JupyterHub single-user server mounts only its user's files: it runs only that user's tasks
            hub_user = os.environ.get("JUPYTERHUB_USER") or None
            self.service.engine.start_scheduler(self.scheduler_poll_seconds, hub_user)
        base_url = self.serverapp.base_url if self.serverapp is not None else "/"
        self.log.info("deerflow: gateway at %sdeerflow/api (data in %s)", base_url,
                      self.service.engine.paths.home)
        if self.gc_freeze:
            gc.collect()  # what start-up left for collection goes first; the rest is long-lived
            gc.freeze()

    def initialize_handlers(self) -> None:
        """Register every route of :mod:`jupyter_ext.handlers`."""
        from jupyter_ext.handlers import default_handlers

        self.handlers.extend(default_handlers)

    async def stop_extension(self) -> None:
        """Interrupt active runs and close the database when the server stops."""
        if self.service is not None:
            service, self.service = self.service, None
            await asyncio.to_thread(service.stop)

