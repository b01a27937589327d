# Completed by the deployment issue; the layout is fixed now.
ARG BASE_IMAGE=python:3.12-slim
FROM ${BASE_IMAGE}
WORKDIR /app
COPY requirements.txt .
RUN python3 -m venv /opt/venv && /opt/venv/bin/pip install --no-cache-dir -r requirements.txt
COPY mha_core ./mha_core
COPY app ./app
ENV PYTHONPATH=/app
EXPOSE 8501
CMD ["/opt/venv/bin/streamlit", "run", "app/streamlit_app.py", "--server.address=0.0.0.0", "--server.port=8501"]
