"""AI clean-up of dictated text through an OpenAI-compatible chat endpoint: off until
turned on, local by default, a named consent before text goes to another host, a time
budget, and a guard that delivers the raw text rather than lose or invent a word.

    cleaner = cleaner_for(settings, api_key=lambda: cleanup_key_store().get())
    if cleaner is not None:
        outcome = cleaner.clean(text, on_late=keep_in_history)
        text = outcome.text
"""

from voxtray.cleanup.cleaner import (
    Cleaner,
    CleanupConfig,
    CleanupSettings,
    cleaner_for,
    cleanup_config,
)
from voxtray.cleanup.consent import (
    ConsentedHosts,
    Permission,
    check_endpoint,
    consent_question,
    consented_hosts_problem,
)
from voxtray.cleanup.endpoint import DEFAULT_ENDPOINT, endpoint_problem, is_local_host
from voxtray.cleanup.guard import GuardLimits
from voxtray.cleanup.keys import cleanup_key_store
from voxtray.cleanup.outcome import CleanupOutcome, Reason, Timings
from voxtray.cleanup.prompts import PRESETS, prompt_problem, resolve_prompt

__all__ = [
    "DEFAULT_ENDPOINT",
    "PRESETS",
    "Cleaner",
    "CleanupConfig",
    "CleanupOutcome",
    "CleanupSettings",
    "ConsentedHosts",
    "GuardLimits",
    "Permission",
    "Reason",
    "Timings",
    "check_endpoint",
    "cleaner_for",
    "cleanup_config",
    "cleanup_key_store",
    "consent_question",
    "consented_hosts_problem",
    "endpoint_problem",
    "is_local_host",
    "prompt_problem",
    "resolve_prompt",
]
