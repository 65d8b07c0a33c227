"""A signal of one's own, written with `loopwatch.extend` alone: the example the extension
tests share (a harness's rule: deploying again with no file written since is a loop)."""

from __future__ import annotations

from loopwatch.extend import PROOF, Count, Finding, Message, Signal, SignalParams, Step

__all__ = ["DeployParams", "Redeploy", "Redeployed"]


class Redeployed(Message):
    template = "deployed {count} times without a change in between"
    hint_template = "find out why the deploy is needed again before deploying"

    def __init__(self, count: int) -> None:
        self.count = count


class DeployParams(SignalParams):
    #: deploys in a row with nothing written between them that earn the nudge
    threshold: Count = 2


class Redeploy(Signal[DeployParams]):
    """A harness's own rule: deploying again with no file written since is a loop."""

    name = "redeploy"
    grade = PROOF

    def __init__(self, params: DeployParams) -> None:
        super().__init__(params)
        self.count = 0
        self.first = 0

    def on_step(self, step: Step) -> Finding | None:
        if step.wrote:
            self.count = 0
            return None
        if step.name != "deploy":
            return None
        self.count += 1
        self.first = self.first if self.count > 1 else step.index
        return Finding(
            signal=self.name,
            severity=self.count / self.params.threshold,
            key=self.first,
            message=Redeployed(self.count),
            repeats=self.count,
            tools=("deploy",),
            started_index=self.first,
            index=step.index,
            at=step.at,
        )
