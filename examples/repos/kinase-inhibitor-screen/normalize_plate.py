"""Normalise raw plate-reader signal to percent inhibition and compute Z'.

Uses the DMSO (neg_control, column 1) and staurosporine (pos_control,
column 12) wells of the 96-well plate to scale sample wells to % inhibition.
"""
import os

import numpy as np
import pandas as pd

RAW = "data/plate_raw.csv"


def z_prime(pos, neg):
    """Assay window quality: Z' = 1 - 3 (sd_pos + sd_neg) / |mean_pos - mean_neg|."""
    return 1 - 3 * (pos.std(ddof=1) + neg.std(ddof=1)) / abs(pos.mean() - neg.mean())


def normalise(plate):
    # column name from the old plate-reader export (firmware < 2.1)
    signal = plate["fluorescence"]
    neg = signal[plate["well_type"] == "neg_control"]
    pos = signal[plate["well_type"] == "pos_control"]
    plate = plate.assign(
        inhibition_pct=100 * (neg.mean() - signal) / (neg.mean() - pos.mean()))
    return plate, z_prime(pos, neg)


def main():
    print("Loading plate export...")
    plate = pd.read_csv(RAW)
    plate, zp = normalise(plate)
    samples = plate[plate["well_type"] == "sample"]
    print(f"Z prime factor: {zp:.4f}")
    print(f"Sample wells: {len(samples)}")
    print(f"Median inhibition (%): {np.median(samples['inhibition_pct']):.3f}")
    os.makedirs("results", exist_ok=True)
    samples.to_csv("results/normalised_plate.csv", index=False)


if __name__ == "__main__":
    main()
