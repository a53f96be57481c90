"""Beer-Lambert calibration for the Griess nitrite assay (540 nm).

Fits absorbance = slope * concentration + intercept to the standards,
reports the molar absorptivity (1 cm cuvette), the limit of detection and
the back-calculated nitrite concentration of each unknown sample.
"""
import json
import os

import numpy as np
import pandas as pd

PATH_LENGTH_CM = 1.0


def fit_calibration(cal):
    x = cal["concentration_umol_L"].to_numpy(float)
    y = cal["absorbance_540nm"].to_numpy(float)
    slope, intercept = np.polyfit(x, y, 1)
    resid = y - (slope * x + intercept)
    r2 = 1.0 - (resid ** 2).sum() / ((y - y.mean()) ** 2).sum()
    s_resid = np.sqrt((resid ** 2).sum() / (len(x) - 2))
    lod = 3.3 * s_resid / slope
    return slope, intercept, r2, lod


def quantify(unknowns, slope, intercept):
    mean_abs = unknowns.groupby("sample_id", sort=False).agg(
        absorbance=("absorbance_540nm", "mean"),
        dilution=("dilution_factor", "first"))
    conc = (mean_abs["absorbance"] - intercept) / slope * mean_abs["dilution"]
    return conc.round(3)


def main():
    cal = pd.read_csv("data/calibration.csv")
    unknowns = pd.read_csv("data/unknown_samples.csv")
    slope, intercept, r2, lod = fit_calibration(cal)
    # slope is in AU per umol/L -> epsilon in L mol^-1 cm^-1
    epsilon = slope * 1e6 / PATH_LENGTH_CM

    print(f"Calibration slope (AU L/umol): {slope:.6f}")
    print(f"Calibration intercept (AU): {intercept:.5f}")
    print(f"R squared: {r2:.5f}")
    print(f"Molar absorptivity (L/mol/cm): {epsilon:.1f}")
    print(f"Limit of detection (umol/L): {lod:.4f}")

    conc = quantify(unknowns, slope, intercept)
    for sample, value in conc.items():
        print(f"Nitrite in {sample} (umol/L): {value:.3f}")

    os.makedirs("results", exist_ok=True)
    out = {
        "calibration": {"slope": round(slope, 6), "intercept": round(intercept, 5),
                        "r_squared": round(r2, 5), "lod_umol_L": round(lod, 4)},
        "samples_umol_L": {k: float(v) for k, v in conc.items()},
    }
    with open("results/nitrite_concentrations.json", "w") as fh:
        json.dump(out, fh, indent=2)


if __name__ == "__main__":
    main()
