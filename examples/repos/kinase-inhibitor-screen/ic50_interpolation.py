"""IC50 estimates by log-linear interpolation of mean dose-response curves.

For each compound the replicate viabilities are averaged at every
concentration and the IC50 is taken where the curve first crosses 50 %
viability, interpolating linearly in log10(concentration).
"""
import json
import os

import numpy as np
import pandas as pd


def mean_curve(df, compound):
    sub = df[df["compound"] == compound]
    return sub.groupby("concentration_nM")["viability_pct"].mean().sort_index()


def interpolate_ic50(curve, threshold=50.0):
    conc = curve.index.to_numpy(float)
    resp = curve.to_numpy(float)
    below = np.nonzero(resp < threshold)[0]
    if len(below) == 0 or below[0] == 0:
        return float("nan")
    i = below[0]
    x0, x1 = np.log10(conc[i - 1]), np.log10(conc[i])
    y0, y1 = resp[i - 1], resp[i]
    return float(10 ** (x0 + (threshold - y0) * (x1 - x0) / (y1 - y0)))


def main():
    df = pd.read_csv("data/dose_response.csv")
    results = {}
    for compound in sorted(df["compound"].unique()):
        curve = mean_curve(df, compound)
        ic50 = interpolate_ic50(curve)
        results[compound] = {
            "ic50_nM": round(ic50, 2),
            "pIC50": round(9 - np.log10(ic50), 3),
            "max_inhibition_pct": round(100 - float(curve.min()), 2),
        }
        print(f"IC50 {compound} (nM): {ic50:.2f}")
        print(f"pIC50 {compound}: {results[compound]['pIC50']:.3f}")

    most_potent = min(results, key=lambda c: results[c]["ic50_nM"])
    print(f"Compounds tested: {len(results)}")
    print(f"Most potent compound: {most_potent}")

    os.makedirs("results", exist_ok=True)
    with open("results/ic50_estimates.json", "w") as fh:
        json.dump(results, fh, indent=2)


if __name__ == "__main__":
    main()
