"""Fit the German Credit example's model and save it with skops (no pickle).

    python examples/german-onehot/make_model.py    # writes model.skops beside this file

A scikit-learn Pipeline as an institution would keep it: a ColumnTransformer one-hot
encodes the unordered columns (purpose, housing, status_sex) and standardises the numeric
ones, then a logistic regression. It is fitted on the raw table (the columns
``german-onehot.toml`` names under ``data.features``, in that order), so the world hands
it the same raw columns rebuilt from its rows (docs/own-data.md, "A worked example").
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pandas as pd
import skops.io as sio
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from abm.data import resolve_path

HERE = Path(__file__).resolve().parent
#: the scenario's [data] section: the file, its column names, the features in order
DATA = tomllib.loads((HERE / "german-onehot.toml").read_text())["data"]
CATEGORICAL = list(DATA["onehot"])
NUMERIC = [f for f in DATA["features"] if f not in CATEGORICAL]


def fitted() -> object:
    """The Pipeline fitted on the German Credit table (1 = good risk, as the file codes it)."""
    table = pd.read_csv(resolve_path(DATA["path"]), sep=r"\s+", header=None, names=DATA["columns"])
    pipe = make_pipeline(
        ColumnTransformer(
            [
                ("numeric", StandardScaler(), NUMERIC),
                ("categories", OneHotEncoder(handle_unknown="ignore"), CATEGORICAL),
            ]
        ),
        LogisticRegression(max_iter=1000),
    )
    return pipe.fit(table[DATA["features"]], table[DATA["label"]])


def main() -> None:
    out = HERE / "model.skops"
    sio.dump(fitted(), out)
    print(f"wrote {out}; untrusted types: {sio.get_untrusted_types(file=out)}")


if __name__ == "__main__":
    main()
