"""Estimate the gravitational acceleration g from simple-pendulum timings.

For a simple pendulum T^2 = (4 pi^2 / g) L, so a straight-line fit of the
squared period against string length gives g from the slope. The intercept
absorbs the constant offset from measuring length to the top of the bob.
"""
import json
import os

import numpy as np
import pandas as pd

N_OSC = 10


def load_periods(path="data/pendulum_timings.csv"):
    df = pd.read_csv(path)
    df["period_s"] = df["time_10_osc_s"] / N_OSC
    df["period_sq_s2"] = df["period_s"] ** 2
    return df


def fit_g(df):
    (slope, intercept), cov = np.polyfit(df["length_m"], df["period_sq_s2"], 1, cov=True)
    g = 4 * np.pi ** 2 / slope
    g_err = g * np.sqrt(cov[0, 0]) / slope
    # intercept / slope is the length offset to the bob's centre of mass
    offset = intercept / slope
    return g, g_err, intercept, offset


def main():
    df = load_periods()
    g, g_err, intercept, offset = fit_g(df)
    per_length = df.groupby("length_m")["period_s"].agg(["mean", "std"])
    naive_g = (4 * np.pi ** 2 * per_length.index / per_length["mean"] ** 2).mean()

    print("Pendulum analysis (T^2 versus L fit)")
    print(f"Number of trials: {len(df)}")
    print(f"Distinct lengths: {len(per_length)}")
    print(f"Gravitational acceleration (m/s^2): {g:.4f}")
    print(f"Uncertainty in g (m/s^2): {g_err:.4f}")
    print(f"Intercept (s^2): {intercept:.5f}")
    print(f"Length offset to bob centre (m): {offset:.4f}")
    print(f"Naive g ignoring offset (m/s^2): {naive_g:.4f}")
    print(f"Mean period scatter (s): {per_length['std'].mean():.4f}")

    os.makedirs("results", exist_ok=True)
    with open("results/g_fit.json", "w") as fh:
        json.dump({"g_m_s2": round(float(g), 4), "g_err_m_s2": round(float(g_err), 4),
                   "intercept_s2": round(float(intercept), 5),
                   "length_offset_m": round(float(offset), 4),
                   "n_trials": int(len(df))}, fh, indent=2)


if __name__ == "__main__":
    main()
