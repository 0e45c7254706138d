"""``recourse-abm train recommender|predictor``: SAC training of φ and μ (durable-recourse-rl §4)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from abm.config import parse_overrides
from abm.validation import ConfigError
from lab.plots import plot_learning_curve
from lab.terminal import console, output_dir, progress_bar

# lab.training loads torch and stable-baselines3: the commands import it
# when they run, so that `recourse-abm --help` stays fast


def parse_net(text: str) -> tuple[int, ...]:
    """``64,64`` -> (64, 64)."""
    try:
        net = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise ConfigError(
            f"net = {text!r} is not allowed; allowed: comma-separated layer sizes in [1, 4096], "
            "e.g. 64,64"
        ) from None
    return net


def sac_params(base, net, lr, batch_size, gamma, learning_starts):
    """``base`` (a :class:`SACParams`) with the options given on the command line (validated)."""
    changes = {
        k: v
        for k, v in (
            ("learning_rate", lr),
            ("batch_size", batch_size),
            ("gamma", gamma),
            ("learning_starts", learning_starts),
        )
        if v is not None
    }
    for field, value in changes.items():  # one at a time, so the refusal names the option
        try:
            base.replace(**{field: value})
        except ConfigError as exc:
            option = OPTION_OF[field]
            raise ConfigError(str(exc).replace(field, option, 1)) from None
    if net is not None:
        changes["net"] = parse_net(net)
    return base.replace(**changes)


def say_fresh_start(out: Path, resume: bool) -> None:
    """With ``--resume`` and no checkpoint under ``out``, say that training starts afresh
    (a resume that quietly started over would look like one that continued)."""
    from lab.training import latest_checkpoint

    if resume and latest_checkpoint(Path(out) / "checkpoints") is None:
        console.print(
            f"--resume: no checkpoint in {escape(str(Path(out) / 'checkpoints'))}; starting afresh",
            highlight=False,
        )


#: the SAC field each training option sets
OPTION_OF = {
    "learning_rate": "--lr",
    "batch_size": "--batch-size",
    "gamma": "--gamma",
    "learning_starts": "--learning-starts",
}


def set_threads(threads: int) -> None:
    """Torch's intra-op threads for this process (a CLI choice, never set by the library)."""
    if not 1 <= threads <= 256:
        raise ConfigError(f"threads = {threads!r} is not allowed; allowed: an integer in [1, 256]")
    import torch

    torch.set_num_threads(threads)


def bar_progress(bar, task):
    def report(done: int, total: int) -> None:
        bar.update(task, completed=done, total=total)

    return report


NetOpt = Annotated[str | None, typer.Option(help="hidden layer sizes, e.g. 64,64")]
LrOpt = Annotated[float | None, typer.Option("--lr", help="learning rate in (0, 1]")]
BatchOpt = Annotated[int | None, typer.Option(help="SAC minibatch size")]
GammaOpt = Annotated[float | None, typer.Option(help="discount in [0, 1]")]
StartsOpt = Annotated[int | None, typer.Option(help="random-action steps before learning")]
ThreadsOpt = Annotated[
    int, typer.Option(min=1, max=256, help="torch CPU threads (1 is fastest for small nets)")
]
EvalEveryOpt = Annotated[
    int, typer.Option(help="evaluate (SB3 EvalCallback, deterministic) every N steps; 0: never")
]
EvalEpisodesOpt = Annotated[int, typer.Option(help="episodes per evaluation")]
SetOpt = Annotated[list[str] | None, typer.Option("--set", help="scenario override KEY=VALUE")]
ScenarioOpt = Annotated[str, typer.Option("--scenario", "-s", help="preset or .toml")]
ResumeOpt = Annotated[bool, typer.Option(help="continue from the latest checkpoint in --out")]
RecommenderOpt = Annotated[
    str,
    typer.Option(
        help="recommender inside the env: registry spec, e.g. exact-linear, ustun, rl:path=DIR"
    ),
]
MaxMarginOpt = Annotated[
    float, typer.Option(help="goal = last threshold + up to this margin, in (0, 1]")
]
CapacityOpt = Annotated[
    bool, typer.Option(help="μ also observes the places and entrants in force, k_t/k and m_t/m")
]


def recommender(
    scenario: ScenarioOpt = "paper",
    out: Annotated[Path, typer.Option(help="artefact directory")] = Path(
        "results/artefacts/recommender"
    ),
    seed: Annotated[int, typer.Option(help="training seed")] = 0,
    warmup_episodes: Annotated[
        int,
        typer.Option(
            help="episodes rewarded on error only (paper 3000; 0 suits --action direction)"
        ),
    ] = 0,
    episodes: Annotated[
        int, typer.Option(help="episodes with error and cost (paper 20000)")
    ] = 20_000,
    checkpoint_every: Annotated[int, typer.Option(help="checkpoint every N steps")] = 10_000,
    max_step: Annotated[
        float,
        typer.Option(help="direct action: x_cf = clip(x + max_step a, 0, 1), in (0, 1] (paper 1)"),
    ] = 0.5,
    action: Annotated[
        str,
        typer.Option(
            help="direction (a sets a direction of change; the step length reaching g is found on "
            "M's score) or direct (the paper's: a is the change)"
        ),
    ] = "direction",
    reward_scale: Annotated[
        float | None,
        typer.Option(
            help="SAC is trained on eq. 15 / this (> 0; default 1 for direction, 30 for direct); "
            "the learning curve shows eq. 15"
        ),
    ] = None,
    resume: ResumeOpt = False,
    net: NetOpt = None,
    lr: LrOpt = None,
    batch_size: BatchOpt = None,
    gamma: GammaOpt = None,
    learning_starts: StartsOpt = None,
    eval_every: EvalEveryOpt = 0,
    eval_episodes: EvalEpisodesOpt = 20,
    threads: ThreadsOpt = 1,
    worlds: Annotated[
        str | None,
        typer.Option(
            help="episodes rotate over these world seeds (LO-HI or a,b,c), so φ serves any "
            "world of the scenario; default: the scenario's world alone"
        ),
    ] = None,
    set_: SetOpt = None,
) -> None:
    """Learned recommender φ in the single-candidate environment (§4.1, App. C)."""
    from lab.training import RECOMMENDER_SAC, train_recommender

    out = output_dir(out)
    set_threads(threads)
    sac = sac_params(RECOMMENDER_SAC, net, lr, batch_size, gamma, learning_starts)
    say_fresh_start(out, resume)
    with progress_bar(transient=False) as bar:
        task = bar.add_task("training φ (episodes)", total=warmup_episodes + episodes)
        m = train_recommender(
            out,
            scenario,
            seed=seed,
            warmup_episodes=warmup_episodes,
            episodes=episodes,
            sac=sac,
            checkpoint_every=checkpoint_every,
            max_step=max_step,
            action=action,
            reward_scale=reward_scale,
            eval_every=eval_every,
            eval_episodes=eval_episodes,
            resume=resume,
            progress=bar_progress(bar, task),
            worlds=() if worlds is None else parse_worlds(worlds),
            **parse_overrides(set_),
        )
    plot_learning_curve(
        Path(out) / "learning_curve.csv",
        Path(out) / "learning_curve.png",
        "recommender φ: eq. 15 reward per episode",
    )
    console.print(
        f"φ: {m['steps']} steps, {m['episodes_trained']} episodes, Σ|d - d̂| = "
        f"{m['d_error']:.3g}, CPU {m['cpu_seconds']:.0f} s; written to [bold]{escape(str(out))}[/]"
    )


def predictor(
    alpha: Annotated[float, typer.Option(help="weight of RR in eq. 16, in [0, 1e6]")],
    tau: Annotated[float, typer.Option(help="weight of RF in eq. 16, in [0, 1e6]")],
    recommender: RecommenderOpt = "exact-linear",
    scenario: ScenarioOpt = "paper",
    out: Annotated[Path, typer.Option(help="artefact directory")] = Path(
        "results/artefacts/predictor"
    ),
    seed: Annotated[int, typer.Option(help="training seed")] = 0,
    steps: Annotated[int, typer.Option(help="SAC steps = ticks (paper 7000)")] = 7000,
    checkpoint_every: Annotated[int, typer.Option(help="checkpoint every N steps")] = 1000,
    max_margin: MaxMarginOpt = 0.3,
    capacity_obs: CapacityOpt = False,
    resume: ResumeOpt = False,
    net: NetOpt = None,
    lr: LrOpt = None,
    batch_size: BatchOpt = None,
    gamma: GammaOpt = None,
    learning_starts: StartsOpt = None,
    eval_every: EvalEveryOpt = 0,
    eval_episodes: EvalEpisodesOpt = 3,
    threads: ThreadsOpt = 1,
    n_envs: Annotated[
        int,
        typer.Option(
            help="episodes stepped together as one batch (1-4096); SAC takes a transition "
            "from each per step"
        ),
    ] = 1,
    worlds: Annotated[
        str | None,
        typer.Option(
            help="episodes rotate over these world seeds (LO-HI or a,b,c), so μ serves any "
            "world of the scenario; default: the scenario's world alone"
        ),
    ] = None,
    set_: SetOpt = None,
) -> None:
    """Learned predictor μ (goal scores) in the population environment (§4.2)."""
    from lab.training import PREDICTOR_SAC, train_predictor

    out = output_dir(out)
    set_threads(threads)
    sac = sac_params(PREDICTOR_SAC, net, lr, batch_size, gamma, learning_starts)
    say_fresh_start(out, resume)
    with progress_bar(transient=False) as bar:
        task = bar.add_task(f"training μ (α={alpha:g}, τ={tau:g})", total=steps)
        m = train_predictor(
            out,
            scenario,
            alpha=alpha,
            tau=tau,
            recommender=recommender,
            seed=seed,
            steps=steps,
            sac=sac,
            checkpoint_every=checkpoint_every,
            max_margin=max_margin,
            capacity_obs=capacity_obs,
            eval_every=eval_every,
            eval_episodes=eval_episodes,
            resume=resume,
            progress=bar_progress(bar, task),
            n_envs=n_envs,
            worlds=() if worlds is None else parse_worlds(worlds),
            **parse_overrides(set_),
        )
    plot_learning_curve(
        Path(out) / "learning_curve.csv",
        Path(out) / "learning_curve.png",
        f"predictor μ (α={alpha:g}, τ={tau:g}): eq. 16 reward per episode",
    )
    console.print(
        f"μ: {m['steps']} steps, CPU {m['cpu_seconds']:.0f} s; written to [bold]{escape(str(out))}[/]"
    )


def parse_worlds(text: str) -> tuple[int, ...]:
    """``20-24`` or ``0,3,7`` -> world seeds."""
    try:
        if "-" in text:
            lo, hi = (int(x) for x in text.split("-"))
            worlds = tuple(range(lo, hi + 1))
        else:
            worlds = tuple(int(x) for x in text.split(","))
    except ValueError:
        worlds = ()
    if not worlds or min(worlds) < 0:
        raise ConfigError(
            f"worlds = {text!r} is not allowed; allowed: world seeds >= 0 as a range LO-HI "
            "or a list, e.g. 20-24 or 0,3,7"
        )
    return worlds


def constrained_predictor(
    recommender: RecommenderOpt = "exact-linear",
    target: Annotated[
        float, typer.Option(help="the RR to keep, in (0, 1); μ maximises RF subject to it")
    ] = 0.95,
    worlds: Annotated[
        str, typer.Option(help="world seeds the episodes rotate over, e.g. 20-24")
    ] = "0",
    scenario: ScenarioOpt = "paper",
    out: Annotated[Path, typer.Option(help="artefact directory")] = Path(
        "results/artefacts/constrained-predictor"
    ),
    seed: Annotated[int, typer.Option(help="training seed")] = 0,
    steps: Annotated[int, typer.Option(help="SAC steps = ticks")] = 14_000,
    checkpoint_every: Annotated[int, typer.Option(help="checkpoint every N steps")] = 1000,
    multiplier_lr: Annotated[
        float, typer.Option(help="η, the multiplier's step per unit of RR shortfall (L2)")
    ] = 5.0,
    max_margin: MaxMarginOpt = 0.3,
    capacity_obs: CapacityOpt = False,
    resume: ResumeOpt = False,
    net: NetOpt = None,
    lr: LrOpt = None,
    batch_size: BatchOpt = None,
    gamma: GammaOpt = None,
    learning_starts: StartsOpt = None,
    threads: ThreadsOpt = 1,
    set_: SetOpt = None,
) -> None:
    """μ for a reliability target: maximise RF subject to RR >= TARGET (Lagrangian SAC,
    docs/rl.md), episodes rotating over several worlds."""
    from lab.training import PREDICTOR_SAC, train_constrained_predictor

    if not 0.0 < target < 1.0:
        raise ConfigError(f"target = {target!r} is not allowed; allowed: (0, 1), the RR to keep")
    out = output_dir(out)
    set_threads(threads)
    sac = sac_params(PREDICTOR_SAC, net, lr, batch_size, gamma, learning_starts)
    say_fresh_start(out, resume)
    with progress_bar(transient=False) as bar:
        task = bar.add_task(f"training μ for RR >= {target:g}", total=steps)
        m = train_constrained_predictor(
            out,
            scenario,
            target=target,
            worlds=parse_worlds(worlds),
            recommender=recommender,
            seed=seed,
            steps=steps,
            sac=sac,
            checkpoint_every=checkpoint_every,
            multiplier_lr=multiplier_lr,
            max_margin=max_margin,
            capacity_obs=capacity_obs,
            resume=resume,
            progress=bar_progress(bar, task),
            **parse_overrides(set_),
        )
    plot_learning_curve(
        Path(out) / "learning_curve.csv",
        Path(out) / "learning_curve.png",
        f"predictor μ for RR >= {target:g}: Lagrangian reward per episode",
    )
    console.print(
        f"μ: {m['steps']} steps, λ = {m['multiplier_final']:.3g} at the end, CPU "
        f"{m['cpu_seconds']:.0f} s; written to [bold]{escape(str(out))}[/]"
    )


def register(app: typer.Typer) -> None:
    train_app = typer.Typer(
        help="Train the learned recommender φ or predictor μ with SAC (stable-baselines3, CPU).",
        no_args_is_help=True,
    )
    train_app.command("recommender")(recommender)
    train_app.command("predictor")(predictor)
    train_app.command("constrained-predictor")(constrained_predictor)
    app.add_typer(train_app, name="train")
