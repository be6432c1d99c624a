"""The web process never imports torch (DESIGN.md, "Processes"): it runs no model, starts in a second and
stays small however many of it run. This is the one list of the modules it may import; tests/test_torch_free.py
imports each of them in a fresh interpreter where torch cannot be imported, and checks that starting the web
process (`exag serve`'s imports, the app's) loads no module of this project outside it.

A module the web process comes to import is added here, and must then be torch-free. Modules not listed are
torch-side (the inference worker's server/worker.py, server/respond.py, the agent, the explainers' classes)
and import torch at their top like any other library.
"""

WEB_MODULES = (
    # the command line: `exag serve` runs here, and starts the web process and the local workers; it loads
    # every package's commands (their arguments; what a command runs is imported when it runs)
    "exag_cli", "vqa_agent.commands", "vqa_agent.world.commands", "vqa_agent.world.default", "explainers.commands",
    "server.commands", "experiments.analyze", "experiments.benchmark", "experiments.benchmark.commands",
    "experiments.preregister", "experiments.simulate", "experiments.simulate.commands",
    # server/: the web app, the transport, and the supervision of this machine's workers
    "server", "server.admin", "server.admission", "server.agents", "server.app", "server.browser", "server.check_stages",
    "server.completion", "server.config", "server.embedded_redis", "server.events", "server.game_stage",
    "server.inference", "server.json_text", "server.locks", "server.participation", "server.play", "server.processes",
    "server.rating_task", "server.release", "server.reports", "server.rounds", "server.routes", "server.schemas",
    "server.serve", "server.slots", "server.store", "server.study_check", "server.throttle", "server.torch_free",
    "server.transport_bounds",
    # what they read below them: the game's rules and study logic, the explainers' names and scales, the
    # world (the pool's scenes and renders) and the agents' checkpoints (located, never loaded)
    "game", "game.assignment", "game.checks", "game.commands", "game.export", "game.image_pool", "game.image_sets",
    "game.completion_link", "game.consent_form", "game.export_signature", "game.fingerprints", "game.offer", "game.pool",
    "game.preregistration", "game.quality", "game.rules", "game.seeding", "game.settings", "game.state",
    "game.study",
    "explainers", "explainers.registry", "explainers.scales", "explainers.table_entry",
    # a study that names a plugin explainer: the web process loads and checks it (explainers/plugins.py)
    "explainers.agent_interface", "explainers.base", "explainers.plugins", "explainers.kinds",
    "explainers.kinds.attention", "explainers.kinds.coherence", "explainers.kinds.fields",
    "explainers.kinds.packing", "explainers.kinds.precision", "explainers.kinds.qa_pairs",
    "explainers.kinds.seen", "explainers.kinds.text", "explainers.kinds.words",
    "vqa_agent", "vqa_agent.checkpoints", "vqa_agent.distances", "vqa_agent.known_image", "vqa_agent.world",
    "vqa_agent.world.build", "vqa_agent.world.clevr_io", "vqa_agent.world.explanations", "vqa_agent.world.facts",
    "vqa_agent.world.parser", "vqa_agent.world.programs", "vqa_agent.world.questions", "vqa_agent.world.render",
    "vqa_agent.world.scene", "vqa_agent.threads",
    # the admin's live report, which `exag serve` hands to the app: it runs in a child of the web process
    # (server/reports.py), which loads the analysis, torch-free too
    "experiments", "experiments.analysis.live",
)
