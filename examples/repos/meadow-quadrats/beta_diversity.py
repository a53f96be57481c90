# Beta diversity between meadow sites (flat analysis script).
# Whittaker's beta, mean pairwise Jaccard similarity and Bray-Curtis
# dissimilarity computed on quadrat-pooled abundances.
import itertools
import json
import os

import numpy as np
import pandas as pd

from utils import bray_curtis

df = pd.read_csv("data/quadrats.csv")
abund = df.pivot_table(index="site_id", columns="species", values="count",
                       aggfunc="sum", fill_value=0)
presence = abund > 0

alpha = presence.sum(axis=1)
gamma = int(presence.any(axis=0).sum())
whittaker_beta = gamma / alpha.mean()

jaccard = []
bray = {}
for s1, s2 in itertools.combinations(abund.index, 2):
    a, b = presence.loc[s1].to_numpy(), presence.loc[s2].to_numpy()
    jaccard.append((a & b).sum() / (a | b).sum())
    bray[f"{s1}|{s2}"] = bray_curtis(abund.loc[s1], abund.loc[s2])

most_diss = max(bray, key=bray.get)
quadrats_per_site = df.groupby("site_id")["quadrat"].nunique()

print("Beta diversity across sites")
print(f"Number of sites: {abund.shape[0]}")
print(f"Quadrats surveyed: {int(quadrats_per_site.sum())}")
print(f"Mean alpha richness: {alpha.mean():.4f}")
print(f"Whittaker beta diversity: {whittaker_beta:.4f}")
print(f"Mean pairwise Jaccard similarity: {np.mean(jaccard):.4f}")
print(f"Max Bray-Curtis dissimilarity: {bray[most_diss]:.4f}")
print(f"Most dissimilar site pair: {most_diss.replace('|', ' vs ')}")

os.makedirs("results", exist_ok=True)
summary = {
    "gamma_richness": gamma,
    "mean_alpha_richness": round(float(alpha.mean()), 4),
    "whittaker_beta": round(float(whittaker_beta), 4),
    "mean_jaccard": round(float(np.mean(jaccard)), 4),
    "bray_curtis": {k: round(v, 4) for k, v in bray.items()},
}
with open("results/beta_diversity.json", "w") as fh:
    json.dump(summary, fh, indent=2)
