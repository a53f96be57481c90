"""Test doubles that run locally: stand-in GitHub, Hub and OpenAI servers, and corpus helpers."""
