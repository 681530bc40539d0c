"""The escalation state machine, built top to bottom.

    baseline -> triage -> propose -+-> verify -> decide -> propose ...
                   ^               |
                   |               +-> escalate -> profile | inspect_ir | analyze_passes -> propose
                   |                            \\-> finish
A task whose own code does not run goes from baseline straight to finish (`route_after_baseline`).
Routers read the decision a node wrote (`state["next"]`) or the pending candidates; their `Literal`
return types list the next nodes.
"""

from __future__ import annotations

from typing import Literal

from langgraph.graph import END, START, StateGraph

from diagnose.agent import nodes, policy
from diagnose.agent.state import Context, State


def route_after_baseline(state: State) -> Literal["triage", "finish"]:
    return "finish" if policy.broken_task(policy.baseline_of(state)) else "triage"


def route_after_propose(state: State) -> Literal["verify", "escalate"]:
    return "verify" if state.get("pending") else "escalate"


def route_after_escalate(state: State) -> Literal["profile", "inspect_ir", "analyze_passes", "finish"]:
    return state["next"]


def route_after_decide(state: State) -> Literal["propose", "finish"]:
    return state["next"]


def build_graph(checkpointer=None):
    graph = StateGraph(State, context_schema=Context)
    graph.add_node("baseline", nodes.measure_baseline)
    graph.add_node("triage", nodes.triage)
    graph.add_node("profile", nodes.profile)
    graph.add_node("inspect_ir", nodes.inspect_ir)
    graph.add_node("analyze_passes", nodes.analyze_passes)
    graph.add_node("propose", nodes.propose)
    graph.add_node("verify", nodes.verify)
    graph.add_node("decide", nodes.decide)
    graph.add_node("escalate", nodes.escalate)
    graph.add_node("finish", nodes.finish)
    graph.add_edge(START, "baseline")
    graph.add_conditional_edges("baseline", route_after_baseline)
    graph.add_edge("triage", "propose")
    graph.add_conditional_edges("propose", route_after_propose)
    graph.add_edge("verify", "decide")
    graph.add_conditional_edges("decide", route_after_decide)
    graph.add_conditional_edges("escalate", route_after_escalate)
    for level_node in ("profile", "inspect_ir", "analyze_passes"):
        graph.add_edge(level_node, "propose")
    graph.add_edge("finish", END)
    return graph.compile(checkpointer=checkpointer)
