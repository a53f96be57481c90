"""Seasonal cycle (monthly climatology) of near-surface air temperature.

Computes the mean, standard deviation and extremes of each calendar month over
the full record and reports the amplitude of the annual cycle.
"""
import json
import os

import pandas as pd

DATA = "data/monthly_temperature.csv"
META = "data/station_metadata.json"
MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun",
          "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]


def load_series(path):
    df = pd.read_csv(path)
    return df.dropna(subset=["tmean_c"])


def monthly_climatology(df):
    clim = df.groupby("month")["tmean_c"].agg(["mean", "std", "min", "max", "count"])
    clim.index.name = "month"
    clim["month_name"] = [MONTHS[m - 1] for m in clim.index]
    return clim.round(3)


def main():
    with open(META) as fh:
        meta = json.load(fh)
    print(f"Seasonal cycle for {meta['name']} ({meta['station_id']})")
    df = load_series(DATA)
    clim = monthly_climatology(df)

    warmest = clim["mean"].idxmax()
    coldest = clim["mean"].idxmin()
    amplitude = clim["mean"].max() - clim["mean"].min()

    print(f"Annual mean temperature (degC): {df['tmean_c'].mean():.4f}")
    print(f"Seasonal amplitude (K): {amplitude:.4f}")
    print(f"Warmest month: {MONTHS[warmest - 1]}")
    print(f"Warmest month mean (degC): {clim.loc[warmest, 'mean']:.3f}")
    print(f"Coldest month: {MONTHS[coldest - 1]}")
    print(f"Coldest month mean (degC): {clim.loc[coldest, 'mean']:.3f}")
    print(f"Largest interannual std (K): {clim['std'].max():.3f}")

    os.makedirs("results", exist_ok=True)
    clim.to_csv("results/monthly_climatology.csv")


if __name__ == "__main__":
    main()
