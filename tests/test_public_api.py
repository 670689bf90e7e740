import tether


def test_public_names_are_pinned():
    assert sorted(tether.__all__) == sorted([
        "Agent", "AgentTask", "RunSession", "RunStop", "run_task",
        "CaseFileError", "Decision", "DecisionKind", "FunctionModel", "Message", "Model", "ModelFailure",
        "ModelRequest", "ModelRequestsForbidden", "ModelResponse", "RunConfig", "RunFailure", "RunResult",
        "ScriptExhausted", "ScriptLeftover", "ScriptedModel", "TerminalStatus", "TetherError", "Tool",
        "ToolCallRequest", "ToolResult", "ToolSet", "ToolSpec", "Trajectory", "Turn", "UnknownModelSpec", "Usage",
        "UsageError", "__version__", "allow_model_requests", "resolve_model", "run_agent", "run_agent_sync", "tool",
    ])
    for name in tether.__all__:
        assert hasattr(tether, name)


def test_error_families_are_apart():
    assert issubclass(tether.ScriptExhausted, tether.UsageError)
    assert issubclass(tether.ModelFailure, tether.RunFailure)
    assert not issubclass(tether.RunFailure, tether.UsageError)


def test_terminal_statuses_cover_the_seed():
    assert {s.value for s in tether.TerminalStatus} >= {
        "completed", "submitted", "succeeded", "rejected", "needs_human", "failed", "unknown",
        "step_limit", "budget_exceeded", "loop_aborted", "error"}
