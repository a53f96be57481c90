"""trailforge: verified training environments and trajectories from scientific material."""
__version__ = "0.1.0"
