"""Downstream workflow templates shipped as package data (`crcr init downstream`)."""
