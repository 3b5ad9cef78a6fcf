<#
.SYNOPSIS
  Installs a Ferry Agent instance as a Windows service. UNTESTED: no Windows machine is part of
  Ferry's test runs; treat this script as a starting point and check each step.

.DESCRIPTION
  1. `ferry agent install` registers the instance under %ProgramData%\Ferry\agents\ferry-agent-<n>
     (numbered in installation order; config.json holds the Agent's secret: the script limits the
     folder to SYSTEM and Administrators).
  2. Node.js is not a service binary, so a service wrapper runs `ferry agent run`: NSSM
     (https://nssm.cc, `nssm.exe` on PATH) restarts it on failure; exit code 78 (a configuration
     error such as a cloned installation) is not restarted.

.EXAMPLE
  .\install-service.ps1 -Key 0b5f... -Service https://ferry.example.com
#>
param(
  [Parameter(Mandatory = $true)][string]$Key,
  [Parameter(Mandatory = $true)][string]$Service,
  [string]$Name,
  [string]$AgentHome = (Join-Path $env:ProgramData 'Ferry\agents'),
  [string]$Ferry = (Join-Path $PSScriptRoot '..\..\dist\src\cli\main.js')
)
$ErrorActionPreference = 'Stop'
$node = (Get-Command node.exe).Source
$nssm = (Get-Command nssm.exe).Source
$Ferry = (Resolve-Path $Ferry).Path

$args = @($Ferry, 'agent', 'install', '--home', $AgentHome, '--key', $Key, '--service', $Service, '--no-service')
if ($Name) { $args += @('--name', $Name) }
$out = & $node @args
if ($LASTEXITCODE -ne 0) { throw "ferry agent install failed: $out" }
Write-Output $out
if (-not ($out -match 'as (ferry-agent-(\d+)) in (.+)$')) { throw 'Unexpected output of ferry agent install.' }
$serviceName = $Matches[1]; $instance = $Matches[2]; $dir = $Matches[3].Trim()

# Only SYSTEM and Administrators may read the instance folder (it holds the secret).
icacls $dir /inheritance:r /grant:r 'SYSTEM:(OI)(CI)F' 'Administrators:(OI)(CI)F' | Out-Null

& $nssm install $serviceName $node $Ferry agent run --home $AgentHome --instance $instance
& $nssm set $serviceName AppDirectory $dir
& $nssm set $serviceName AppEnvironmentExtra "FERRY_AGENT_HOME=$AgentHome"
& $nssm set $serviceName AppExit Default Restart
& $nssm set $serviceName AppExit 78 Exit
& $nssm set $serviceName AppStopMethodConsole 60000
& $nssm set $serviceName Start SERVICE_AUTO_START
& $nssm start $serviceName
Write-Output "Windows service $serviceName installed and started."
