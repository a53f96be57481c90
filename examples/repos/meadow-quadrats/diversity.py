"""Alpha diversity per site from the 2023 meadow quadrat survey.

Counts from six 1 m^2 quadrats per site are pooled, then Shannon (H'),
Gini-Simpson and Pielou evenness are computed for each site.
"""
import os

import pandas as pd

from utils import pielou_evenness, shannon_index, simpson_index

DATA_PATH = "data/quadrats.csv"
OUT_PATH = "results/site_diversity.csv"


def site_by_species(df):
    """Pool quadrats into a site x species abundance matrix."""
    return df.groupby(["site_id", "species"])["count"].sum().unstack(fill_value=0)


def summarise(abundance):
    rows = []
    for site, counts in abundance.iterrows():
        values = counts.to_numpy()
        rows.append({
            "site_id": site,
            "richness": int((values > 0).sum()),
            "individuals": int(values.sum()),
            "shannon": round(shannon_index(values), 4),
            "simpson": round(simpson_index(values), 4),
            "evenness": round(pielou_evenness(values), 4),
        })
    return pd.DataFrame(rows)


def main():
    print("Loading quadrat survey...")
    df = pd.read_csv(DATA_PATH)
    abundance = site_by_species(df)
    table = summarise(abundance)

    os.makedirs("results", exist_ok=True)
    table.to_csv(OUT_PATH, index=False)

    for row in table.itertuples(index=False):
        print(f"Site {row.site_id} species richness: {row.richness}")
        print(f"Site {row.site_id} Shannon diversity index: {row.shannon:.4f}")
        print(f"Site {row.site_id} Simpson diversity index: {row.simpson:.4f}")

    best = table.loc[table["shannon"].idxmax(), "site_id"]
    print(f"Gamma species richness: {abundance.shape[1]}")
    print(f"Mean Shannon diversity index: {table['shannon'].mean():.4f}")
    print(f"Most diverse site: {best}")
    print(f"Wrote {OUT_PATH}")


if __name__ == "__main__":
    main()
