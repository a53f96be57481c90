# Monthly temperature anomalies and linear warming trend for station DEMO-0421.
# Anomalies are relative to the 2000-2009 monthly climatology; the trend is an
# ordinary least-squares fit (numpy.polyfit) of monthly anomalies on time.
import json
import os

import numpy as np
import pandas as pd

BASELINE = (2000, 2009)

print("Loading monthly series...")
df = pd.read_csv("data/monthly_temperature.csv")
n_missing = int(df["tmean_c"].isna().sum())
df = df.dropna(subset=["tmean_c"]).copy()

in_base = df["year"].between(*BASELINE)
climatology = df[in_base].groupby("month")["tmean_c"].mean()
df["anomaly_k"] = df["tmean_c"] - df["month"].map(climatology)
df["decimal_year"] = df["year"] + (df["month"] - 0.5) / 12.0

slope, intercept = np.polyfit(df["decimal_year"], df["anomaly_k"], 1)
trend_per_decade = slope * 10.0

annual = df.groupby("year")["anomaly_k"].mean()
recent = annual.loc[2014:2023].mean()
warmest_year = int(annual.idxmax())
coldest_year = int(annual.idxmin())

print(f"Baseline period: {BASELINE[0]}-{BASELINE[1]}")
print(f"Months analysed: {len(df)}")
print(f"Missing months: {n_missing}")
print(f"Mean anomaly 2014-2023 (K): {recent:.4f}")
print(f"Linear trend (K/decade): {trend_per_decade:.4f}")
print(f"Warmest year: {warmest_year}")
print(f"Warmest year anomaly (K): {annual.max():.4f}")
print(f"Coldest year: {coldest_year}")

os.makedirs("results", exist_ok=True)
summary = {
    "station_id": str(df["station_id"].iloc[0]),
    "baseline_start": BASELINE[0],
    "baseline_end": BASELINE[1],
    "months_analysed": int(len(df)),
    "trend_k_per_decade": round(float(trend_per_decade), 4),
    "mean_anomaly_2014_2023_k": round(float(recent), 4),
    "warmest_year": warmest_year,
    "annual_anomaly_k": {str(y): round(float(v), 4) for y, v in annual.items()},
}
with open("results/trend_summary.json", "w") as fh:
    json.dump(summary, fh, indent=2)
