"""The adaptations: what this package adds to the paper's method, each a part that can be turned off.

Each module is one adaptation, switched by one field of :class:`~searchain_graph.method.context.Context`.
``Context(preset="paper")`` turns them all off; the default preset, ``"tuned"``, turns on those
measured at least harmless on development questions (``docs/method.md`` has the measurement behind
each, and the choose set's one-switch-off ablation). Two are off in both presets and stay on request:
``stated_answers`` (in :mod:`.answer_checks`), which lost more answers than it kept on the choose set,
and ``compose_supported``, whose saving ``stop_at_final`` ends:

=====================================  ============================  =============================================
module                                 ``Context`` field             what it changes in the paper's method
=====================================  ============================  =============================================
:mod:`.turns`                          ``demonstrations="turns"``    the worked examples as earlier chat turns
:mod:`.same_meaning`, :mod:`.query_kinds`  ``duplicates="meaning"``  ``DuplicateQuery`` by meaning, guarded by kind
:mod:`.answer_checks`                  ``answer_checks``             a *g* that cannot answer the query passes
:mod:`.chain_repair`                   ``chain_repair``              the parsed chain mended before IR checks it
:mod:`.tracing_checks`                 ``tracing_checks``            uncited or contradicting tracing replaced
:mod:`.tracing_passages`               ``tracing``                   the tracing shown each step's passage
:mod:`.options`                        ``option_answers``            "A or B?" answered with an option
:mod:`.date_order`                     ``date_order``                "born first, A or B?" answered from the dates
:mod:`.closing`                        ``stop_at_final``,            no final content written before the tracing,
                                       ``close_early``,              no round after IR changed the last node, or
                                       ``check_on``,                 a node no later node builds on, no tracing
                                       ``compose_supported``         call where IR stands behind every step
=====================================  ============================  =============================================

``verify_yes_no`` is the one more field the presets set: the paper verifies every answer; the
tuned preset asks the reader whether it can answer yes or no (an extractive reader cannot).
"""
