# Bootstrap confidence interval for g from the pendulum timings.
# Trials are resampled with replacement (seeded, so the result is
# reproducible) and the T^2-vs-L slope is refitted for each resample.
import json
import os

import numpy as np
import pandas as pd

N_BOOT = 4000
rng = np.random.default_rng(42)

df = pd.read_csv("data/pendulum_timings.csv")
L = df["length_m"].to_numpy(float)
T2 = (df["time_10_osc_s"].to_numpy(float) / 10.0) ** 2
n = len(L)


def slope_of(x, y):
    xm = x.mean(axis=-1, keepdims=True)
    ym = y.mean(axis=-1, keepdims=True)
    return ((x - xm) * (y - ym)).sum(axis=-1) / ((x - xm) ** 2).sum(axis=-1)


idx = rng.integers(0, n, size=(N_BOOT, n))
boot_slopes = slope_of(L[idx], T2[idx])
boot_g = 4 * np.pi ** 2 / boot_slopes

g_hat = 4 * np.pi ** 2 / slope_of(L, T2)
lo, hi = np.percentile(boot_g, [2.5, 97.5])
se = boot_g.std(ddof=1)

print(f"Bootstrap resamples: {N_BOOT}")
print(f"Point estimate of g (m/s^2): {g_hat:.4f}")
print(f"Bootstrap mean of g (m/s^2): {boot_g.mean():.4f}")
print(f"Bootstrap standard error (m/s^2): {se:.4f}")
print(f"95% CI lower bound (m/s^2): {lo:.4f}")
print(f"95% CI upper bound (m/s^2): {hi:.4f}")
print(f"Standard value inside CI: {'yes' if lo <= 9.80665 <= hi else 'no'}")

os.makedirs("results", exist_ok=True)
with open("results/bootstrap_g.json", "w") as fh:
    json.dump({"n_boot": N_BOOT, "seed": 42, "g_hat": round(float(g_hat), 4),
               "ci95": {"lower": round(float(lo), 4), "upper": round(float(hi), 4)},
               "standard_error": round(float(se), 4)}, fh, indent=2)
